//! Upstream MCP servers in the registry (the seed's `MCP` and `MCPTool`), with an
//! in-process rmcp server whose every answer the tests control (also used by the
//! approval tests).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use piton_host::config::McpError;
use piton_host::upstream::{UpstreamServer, check_server_name};
use piton_host::{
    CallError, Content, GroupNameError, Hints, HintsTrust, Listing, Registry, ToolError, ToolSource,
};
use piton_tests::plugins;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool as RemoteTool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

use crate::support::{call_error, call_ok, load};

/// What the test server has seen and holds.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) calls: AtomicUsize,
    connections: AtomicUsize,
    extra_tools: Mutex<Vec<String>>,
    /// Every tools/list page names a next one.
    endless_pages: std::sync::atomic::AtomicBool,
}

/// A server with `add` (annotated read-only), `shout` (no annotations), `fail`
/// (isError), `broken` (a JSON-RPC error), `structured` (structuredContent only),
/// `nothing` (no content), `image` (text + image + a resource link), `grow`
/// (adds a tool and says the list changed), and whatever `grow` added.
#[derive(Clone)]
struct TestServer(Arc<Seen>);

fn schema(required: &[&str]) -> serde_json::Map<String, Value> {
    let props: serde_json::Map<String, Value> = required
        .iter()
        .map(|name| ((*name).to_owned(), json!({"type": "number"})))
        .collect();
    json!({"type": "object", "properties": props, "required": required})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("test-server", "1"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let read_only = ToolAnnotations::from_raw(None, Some(true), None, None, Some(false));
        let mut tools = vec![
            RemoteTool::new("add", "Adds a and b", schema(&["a", "b"])).with_annotations(read_only),
            RemoteTool::new("shout", "Shouts", schema(&[])),
        ];
        for name in ["fail", "broken", "structured", "nothing", "image", "grow"] {
            tools.push(RemoteTool::new(name, name, schema(&[])));
        }
        let extra = self.0.extra_tools.lock().expect("lock").clone();
        for name in extra {
            tools.push(RemoteTool::new(name, "added by grow", schema(&[])));
        }
        // A name piton cannot register: left out, the rest still listed.
        tools.push(RemoteTool::new("has.dot", "bad name", schema(&[])));
        let mut result = ListToolsResult::with_all_items(tools);
        if self.0.endless_pages.load(Ordering::SeqCst) {
            let page = self.0.calls.fetch_add(1, Ordering::SeqCst);
            result.next_cursor = Some(format!("page-{page}"));
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        let args = request.arguments.unwrap_or_default();
        let number = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let result = match request.name.as_ref() {
            "add" => CallToolResult::success(vec![ContentBlock::text(
                (number("a") + number("b")).to_string(),
            )]),
            "shout" => {
                CallToolResult::success(vec![ContentBlock::text("HEY"), ContentBlock::text("YOU")])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("it went wrong")]),
            "broken" => return Err(ErrorData::internal_error("the server broke", None)),
            "structured" => {
                let mut result = CallToolResult::structured(json!({"n": 7}));
                result.content.clear();
                result
            }
            "nothing" => CallToolResult::success(vec![]),
            "image" => CallToolResult::success(vec![
                ContentBlock::text("look:"),
                ContentBlock::image("AQID", "image/png"),
            ]),
            "grow" => {
                self.0
                    .extra_tools
                    .lock()
                    .expect("lock")
                    .push("grown".into());
                context
                    .peer
                    .notify_tool_list_changed()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                CallToolResult::success(vec![ContentBlock::text("grew")])
            }
            "grown" => CallToolResult::success(vec![ContentBlock::text("I am new")]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

/// The test server as upstream server `name`, and what it sees.
pub(crate) fn test_server(name: &str) -> (UpstreamServer, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    let server = UpstreamServer::in_process(name, move || {
        shared.connections.fetch_add(1, Ordering::SeqCst);
        TestServer(shared.clone())
    })
    .expect("a good name");
    (server, seen)
}

/// The names in a listing.
fn names(listing: &Listing) -> Vec<String> {
    listing
        .tools
        .iter()
        .map(|t| t.spec().name.clone())
        .collect()
}

fn registry_with(server: UpstreamServer) -> Registry {
    let mut registry = Registry::new();
    registry.add_group(server).expect("added");
    registry
}

#[tokio::test]
async fn tools_join_as_server_tool_with_declared_hints_and_connect_lazily() {
    let (server, seen) = test_server("up");
    let registry = registry_with(server.clone());
    assert_eq!(
        seen.connections.load(Ordering::SeqCst),
        0,
        "nothing connects when added"
    );
    assert_eq!(server.connections(), 0);

    let listing = registry.list().await;
    assert!(listing.errors.is_empty(), "{:?}", listing.errors);
    let names = names(&listing);
    assert!(
        names.contains(&"up__add".to_owned()) && names.contains(&"up__shout".to_owned()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("has.dot")), "{names:?}");

    let add = registry.find("up__add").await.expect("found");
    assert_eq!(add.hints(), Hints::read_only().open_world(false));
    assert_eq!(add.hints_trust(), HintsTrust::Declared);
    assert_eq!(add.source(), ToolSource::Mcp("up".into()));
    // No annotations: the seed's worst case.
    let shout = registry.find("up__shout").await.expect("found");
    assert_eq!(shout.hints(), Hints::default());

    assert_eq!(
        call_ok(&registry, "up__add", json!({"a": 2, "b": 3})).await,
        ["5"]
    );
    assert_eq!(server.connections(), 1, "one connection, kept");
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn results_map_as_the_seed_says() {
    let (server, _seen) = test_server("up");
    let registry = registry_with(server);
    assert_eq!(
        call_ok(&registry, "up__shout", json!({})).await,
        ["HEY\nYOU"]
    );
    match registry.call("up__image", json!({})).await {
        Ok(Ok(content)) => assert_eq!(
            content,
            [
                Content::text("look:"),
                Content::Image {
                    mime_type: "image/png".into(),
                    data: vec![1, 2, 3]
                }
            ]
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        registry
            .call("up__structured", json!({}))
            .await
            .expect("runs"),
        Ok(vec![Content::Json {
            json: json!({"n": 7})
        }])
    );
    assert_eq!(
        registry.call("up__nothing", json!({})).await.expect("runs"),
        Ok(vec![])
    );
    assert_eq!(
        call_error(&registry, "up__fail", json!({})).await,
        ToolError::Failed("it went wrong".into())
    );
    assert_eq!(
        call_error(&registry, "up__broken", json!({})).await,
        ToolError::Failed("the server broke".into())
    );
}

#[tokio::test]
async fn missing_required_arguments_are_an_input_error_and_the_server_checks_the_rest() {
    let (server, seen) = test_server("up");
    let registry = registry_with(server);
    let error = call_error(&registry, "up__add", json!({"a": 1})).await;
    assert_eq!(
        error,
        ToolError::Input("\"b\" is a required property".into())
    );
    assert_eq!(
        seen.calls.load(Ordering::SeqCst),
        0,
        "the server was not called"
    );
    // A wrong type is the server's to judge (the schema says number; it sums as 0).
    assert_eq!(
        call_ok(&registry, "up__add", json!({"a": "x", "b": 1})).await,
        ["1"]
    );
    assert_eq!(seen.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn unknown_names_are_unknown_tools() {
    let (server, _seen) = test_server("up");
    let registry = registry_with(server);
    for name in ["up__nope", "other__add", "up__has.dot"] {
        match registry.call(name, json!({})).await {
            Err(CallError::UnknownTool { name: got, known }) => {
                assert_eq!(got, name);
                assert!(known.contains(&"up__add".to_owned()), "{known:?}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn list_changed_from_upstream_refreshes_its_tools() {
    let (server, _seen) = test_server("up");
    let mut changes = server.watch_changes();
    let registry = registry_with(server);
    assert!(matches!(
        registry.call("up__grown", json!({})).await,
        Err(CallError::UnknownTool { .. })
    ));
    assert_eq!(call_ok(&registry, "up__grow", json!({})).await, ["grew"]);
    tokio::time::timeout(std::time::Duration::from_secs(10), changes.changed())
        .await
        .expect("a change is seen")
        .expect("the server is alive");
    assert_eq!(
        call_ok(&registry, "up__grown", json!({})).await,
        ["I am new"]
    );
    let names = names(&registry.list().await);
    assert!(names.contains(&"up__grown".to_owned()), "{names:?}");
}

#[tokio::test]
async fn a_tools_subset_keeps_only_those_and_names_the_missing() {
    let (server, _seen) = test_server("up");
    let registry = registry_with(server.with_tools(["add", "nope"]));
    let listing = registry.list().await;
    let names = names(&listing);
    assert_eq!(names, ["up__add"]);
    assert_eq!(listing.errors.len(), 1);
    let error = listing.errors[0].to_string();
    assert!(
        error.contains("has no tool `nope`") && error.contains("up__add"),
        "{error}"
    );
    assert!(matches!(
        registry.call("up__shout", json!({})).await,
        Err(CallError::UnknownTool { .. })
    ));
}

#[tokio::test]
async fn a_server_that_cannot_start_is_a_connection_error_naming_it() {
    let server = UpstreamServer::stdio(
        "ghost",
        piton_host::upstream::StdioCommand::new("/no/such/program", ["x"]),
    )
    .expect("made");
    let mut registry = registry_with(server);
    registry
        .add(load(plugins::WORD_COUNT).await)
        .expect("word_count");
    let listing = registry.list().await;
    let names = names(&listing);
    assert_eq!(names, ["word_count"], "the other tools are still listed");
    let error = listing.errors[0].to_string();
    assert!(
        error.contains("MCP server `ghost`") && error.contains("/no/such/program"),
        "{error}"
    );
    match registry.call("ghost__x", json!({})).await {
        Err(CallError::Connection { server, message }) => {
            assert_eq!(server, "ghost");
            assert!(message.contains("install it or fix `command`"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn server_names_and_clashes_are_load_errors() {
    assert!(matches!(
        check_server_name("a__b"),
        Err(McpError::Name(GroupNameError::Underscores(_)))
    ));
    let error = UpstreamServer::stdio(
        "bad name",
        piton_host::upstream::StdioCommand::new("x", [""; 0]),
    )
    .expect_err("a name with a space");
    assert_eq!(
        error.problem,
        McpError::Name(GroupNameError::Characters("bad name".into()))
    );
    let (one, _) = test_server("up");
    let (two, _) = test_server("up");
    let mut registry = registry_with(one);
    let error = registry
        .add_group(two)
        .expect_err("a second `up`")
        .to_string();
    assert!(error.contains("added twice"), "{error}");
}

/// `piton serve` itself as a stdio upstream, started through `sh` so that the test
/// learns its process id (`exec` keeps it).
fn piton_upstream(plugins: &std::path::Path, pid_file: &std::path::Path) -> UpstreamServer {
    let script = format!(
        "echo $$ > '{}'; exec '{}' serve --plugins '{}'",
        pid_file.display(),
        env!("CARGO_BIN_EXE_piton"),
        plugins.display()
    );
    let mut command = piton_host::upstream::StdioCommand::new("sh", ["-c".to_owned(), script]);
    command.env.insert(
        "PITON_CACHE_DIR".into(),
        crate::support::cache_dir().display().to_string(),
    );
    UpstreamServer::stdio("inner", command)
        .expect("made")
        .with_timeout(Some(std::time::Duration::from_secs(120)))
}

#[tokio::test]
async fn a_lost_connection_stops_the_run_and_the_next_call_reconnects() {
    let plugins = crate::support::plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let pid_file = plugins.path().join("pid");
    let server = piton_upstream(plugins.path(), &pid_file);
    let registry = registry_with(server.clone());
    let args = json!({"text": "one two three"});
    assert_eq!(
        call_ok(&registry, "inner__word_count", args.clone()).await,
        ["3"]
    );
    // piton's own hints travel as annotations and come back as declared hints.
    let tool = registry.find("inner__word_count").await.expect("found");
    assert_eq!(tool.hints(), Hints::read_only().open_world(false));
    assert_eq!(tool.hints_trust(), HintsTrust::Declared);

    let pid = std::fs::read_to_string(&pid_file).expect("pid written");
    let killed = std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // The kill is seen once the pipe closes; give it a moment, then the call fails.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    match registry.call("inner__word_count", args.clone()).await {
        Err(CallError::Connection { server, message }) => {
            assert_eq!(server, "inner");
            assert!(message.contains("connection was lost"), "{message}");
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
    assert_eq!(call_ok(&registry, "inner__word_count", args).await, ["3"]);
    assert_eq!(server.connections(), 2, "the next call connected again");
    server.disconnect().await;
}

#[tokio::test]
async fn a_streamable_http_upstream_joins_the_registry() {
    let plugins = crate::support::plugins_folder(&[("word_count.wasm", plugins::WORD_COUNT)]);
    let piton = crate::peers::HttpServer::start(plugins.path());
    let server = UpstreamServer::http("web", &piton.url, Default::default()).expect("made");
    let registry = registry_with(server.clone());
    assert_eq!(
        call_ok(&registry, "web__word_count", json!({"text": "a b c"})).await,
        ["3"]
    );
    assert_eq!(
        call_ok(&registry, "web__word_count", json!({"text": "a"})).await,
        ["1"]
    );
    assert_eq!(server.connections(), 1);
    let error = call_error(&registry, "web__word_count", json!({"text": 3})).await;
    assert!(error.to_string().contains("(input error:"), "{error}");
}

#[tokio::test]
async fn http_headers_reach_the_server_and_a_refusal_is_a_connection_error() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.expect("a request comes");
        let mut request = vec![0; 64 * 1024];
        let n = stream.read(&mut request).await.expect("read");
        let body = "no";
        let answer = format!(
            "HTTP/1.1 403 Forbidden\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).await.expect("write");
        String::from_utf8_lossy(&request[..n]).into_owned()
    });
    let headers = [("Authorization".to_owned(), "Bearer s3cret".to_owned())].into();
    let server = UpstreamServer::http("remote", &format!("http://{addr}/mcp"), headers)
        .expect("made")
        .with_timeout(Some(std::time::Duration::from_secs(30)));
    let registry = registry_with(server);
    match registry.call("remote__x", json!({})).await {
        Err(CallError::Connection { server, message }) => {
            assert_eq!(server, "remote");
            assert!(message.contains("could not connect"), "{message}");
        }
        other => panic!("expected a connection error, got {other:?}"),
    }
    let request = seen.await.expect("the server task ends");
    assert!(request.starts_with("POST /mcp HTTP/1.1"), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer s3cret"),
        "{request}"
    );
}

#[test]
fn bad_http_servers_are_refused_when_made() {
    for (url, headers, needle) in [
        ("not a url", vec![], "not a URL"),
        ("ftp://h/mcp", vec![], "http://"),
        ("http://h/mcp", vec![("bad name", "v")], "header name"),
        ("http://h/mcp", vec![("X", "line\nbreak")], "header value"),
        (
            "http://h/mcp",
            vec![("Mcp-Session-Id", "1")],
            "set by the MCP transport",
        ),
    ] {
        let headers = headers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let error = UpstreamServer::http("h", url, headers)
            .expect_err(url)
            .to_string();
        assert!(error.contains(needle), "{url}: {error}");
    }
}

#[tokio::test]
async fn a_server_that_pages_forever_is_cut_off() {
    let (server, seen) = test_server("up");
    seen.endless_pages.store(true, Ordering::SeqCst);
    let registry = registry_with(server);
    let listing = registry.list().await;
    assert!(listing.tools.is_empty());
    let error = listing.errors[0].to_string();
    assert!(error.contains("more than 100 pages of tools"), "{error}");
}

#[tokio::test]
async fn stderr_is_quoted_with_given_secrets_masked_and_bad_bytes_kept_readable() {
    let script = "printf 'bad \\377 byte\\n' >&2; echo \"key $TOKEN rejected\" >&2; exit 1";
    let mut command = piton_host::upstream::StdioCommand::new("sh", ["-c", script]);
    command.env.insert("TOKEN".into(), "s3cret-value".into());
    let server = UpstreamServer::stdio("noisy", command).expect("made");
    let registry = registry_with(server);
    let error = registry.list().await.errors[0].to_string();
    assert!(error.contains("could not connect"), "{error}");
    assert!(error.contains("key *** rejected"), "{error}");
    assert!(error.contains("bad \u{fffd} byte"), "{error}");
    assert!(!error.contains("s3cret"), "{error}");
    assert!(!format!("{registry:?}").contains("s3cret"));
}

#[tokio::test]
async fn a_server_that_never_answers_is_given_up_on_and_the_others_are_listed() {
    let command = piton_host::upstream::StdioCommand::new("sh", ["-c", "exec sleep 600"]);
    let silent = UpstreamServer::stdio("silent", command)
        .expect("made")
        .with_timeout(Some(std::time::Duration::from_millis(500)));
    let (other, _seen) = test_server("up");
    let mut registry = registry_with(silent);
    registry.add_group(other).expect("added");
    let listing = registry.list().await;
    assert!(names(&listing).contains(&"up__add".to_owned()));
    let error = listing.errors[0].to_string();
    assert!(
        error.contains("MCP server `silent`")
            && error.contains("no answer to connecting within 500ms"),
        "{error}"
    );
}

#[tokio::test]
async fn a_short_secret_in_stderr_is_masked_too() {
    let script = "echo \"pin $PIN rejected\" >&2; exit 1";
    let mut command = piton_host::upstream::StdioCommand::new("sh", ["-c", script]);
    command.env.insert("PIN".into(), "7Q!".into());
    let server = UpstreamServer::stdio("pinned", command).expect("made");
    let registry = registry_with(server);
    let error = registry.list().await.errors[0].to_string();
    assert!(error.contains("pin *** rejected"), "{error}");
    assert!(!error.contains("7Q!"), "{error}");
}
