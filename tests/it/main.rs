//! piton's end-to-end tests: one binary, a module per area.

mod approval;
mod cli;
mod config;
mod fs;
mod hostile;
mod lang;
mod limits;
mod loading;
mod mcp_client;
mod net;
mod net_http;
mod peers;
mod protected;
mod registry;
mod replicas;
mod serve_http;
mod serve_http_limits;
mod serve_stdio;
mod shutdown;
mod structure;
mod support;
mod toolbox;
mod upstream;
