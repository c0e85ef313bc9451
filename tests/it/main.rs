//! piton's end-to-end tests: one binary, a module per area.

mod approval;
mod cache;
mod cli;
mod config;
mod deploy;
mod fs;
mod hostile;
mod install;
mod lang;
mod limits;
mod loading;
mod mcp_client;
mod net;
mod net_http;
mod observe;
mod peers;
mod pins;
mod protected;
mod registry;
mod serve_http;
mod serve_http_limits;
mod serve_stdio;
mod structure;
mod support;
mod toolbox;
mod upstream;
