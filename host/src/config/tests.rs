//! piton.toml parsed whole: what each table and key becomes, and each mistake as the
//! variant it is, at its key, with the message a user reads.

use super::*;
use crate::nolinks::MountError;

fn parse(text: &str) -> Result<Config, ConfigError> {
    let dir = std::env::temp_dir();
    let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_owned());
    Config::parse(text, &dir.join("piton.toml"), &env)
}

#[test]
fn an_empty_file_grants_nothing() {
    assert_eq!(parse("").unwrap().tools.len(), 0);
    let tool = &parse("[tools.a]").unwrap().tools["a"];
    assert_eq!(tool, &ToolConfig::default());
}

#[test]
fn a_full_tool_section_parses_into_types() {
    let config = parse(
        r#"
        [tools.fetch_url]
        mounts = [{ host = ".", guest = "/tmp", mode = "write" }]
        network = ["api.example.com:443", { host = "127.0.0.1:8080", headers = { Authorization = "Bearer ${TOKEN}" } }, { host = "db.example.com:5432", tcp = true }]
        env = { LANG = "C" }
        memory = "32MiB"
        timeout = "5s"
        max_output = "1MiB"
        max_log = "4KiB"
        max_write = "2MiB"
        on_trap = "error"
        name = "fetch"
        description = "Fetch a page"
        parallel = false
        open_world = true
        destructive = false
        "#,
    )
    .unwrap();
    let tool = &config.tools["fetch_url"];
    assert_eq!(tool.grants.mounts[0].guest, "/tmp");
    assert_eq!(tool.grants.mounts[0].mode, MountMode::Write);
    assert!(tool.grants.mounts[0].host.is_absolute());
    assert_eq!(tool.grants.network[0].to_string(), "api.example.com:443");
    assert_eq!(
        tool.grants.network[1].headers[0].1.expose(),
        "Bearer s3cret"
    );
    assert!(!tool.grants.network[1].tcp);
    assert!(tool.grants.network[2].tcp);
    assert_eq!(
        tool.grants.network[2].to_string(),
        "db.example.com:5432 +tcp"
    );
    assert_eq!(tool.grants.env, [("LANG".to_owned(), "C".to_owned())]);
    assert_eq!(tool.limits.memory, 32 << 20);
    assert_eq!(tool.limits.timeout, std::time::Duration::from_secs(5));
    assert_eq!(tool.limits.max_output, 1 << 20);
    assert_eq!(tool.limits.max_log, 4 << 10);
    assert_eq!(tool.limits.max_write, 2 << 20);
    assert_eq!(tool.on_trap, OnTrap::Error);
    assert_eq!(tool.name.as_deref(), Some("fetch"));
    assert_eq!(tool.parallel, Some(false));
    assert_eq!(tool.hints.destructive, Some(false));
}

/// A file, the key at fault, a part of the message and the variant.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    fn(&ConfigProblem) -> bool,
);

#[test]
fn errors_name_the_key_and_the_fix() {
    let cases: &[Case] = &[
        ("[tools.a]\nmount = []", "", "unknown field `mount`", |p| {
            matches!(p, ConfigProblem::Toml(_))
        }),
        ("[tool.a]", "", "unknown field `tool`", |p| {
            matches!(p, ConfigProblem::Toml(_))
        }),
        (
            "[tools.a]\nmounts = [{ host = \"/no/such/dir\", guest = \"/d\", mode = \"read\" }]",
            "tools.a.mounts[0].host",
            "create the folder",
            |p| matches!(p, ConfigProblem::MountHost(MountError::Unusable { .. })),
        ),
        (
            "[tools.a]\nmounts = [{ host = \".\", guest = \"d\", mode = \"read\" }]",
            "tools.a.mounts[0].guest",
            "absolute path",
            |p| matches!(p, ConfigProblem::GuestPath(_)),
        ),
        (
            "[tools.a]\nmounts = [{ host = \".\", guest = \"/d/../e\", mode = \"read\" }]",
            "tools.a.mounts[0].guest",
            "without `.` or `..`",
            |p| matches!(p, ConfigProblem::GuestPath(_)),
        ),
        (
            "[tools.a]\nmounts = [{ host = \".\", guest = \"/d\", mode = \"rw\" }]",
            "",
            "use \"read\" or \"write\"",
            |p| matches!(p, ConfigProblem::Toml(_)),
        ),
        (
            "[tools.a]\nmounts = [{ host = \".\", guest = \"/d\", mode = \"read\" }, { host = \".\", guest = \"/d\", mode = \"read\" }]",
            "tools.a.mounts[1].guest",
            "mounted twice",
            |p| matches!(p, ConfigProblem::MountedTwice(_)),
        ),
        (
            "[tools.a]\nnetwork = [\"example.com\"]",
            "tools.a.network[0]",
            "has no port",
            |p| matches!(p, ConfigProblem::Value(ValueError::NoPort(_))),
        ),
        (
            "[tools.a]\nnetwork = [{ host = \"a.com:1\", headers = { X = \"${NOPE}\" } }]",
            "tools.a.network[0].headers.X",
            "NOPE is not set",
            |p| matches!(p, ConfigProblem::Value(ValueError::UnsetVariable(_))),
        ),
        (
            "[tools.a]\nnetwork = [{ host = \"a.com:1\", tpc = true }]",
            "tools.a.network[0].tpc",
            "unknown key \"tpc\"",
            |p| matches!(p, ConfigProblem::Value(ValueError::NetKey(_))),
        ),
        (
            "[tools.a]\nnetwork = [{ host = \"a.com:1\", tcp = \"yes\" }]",
            "tools.a.network[0].tcp",
            "tcp = true",
            |p| matches!(p, ConfigProblem::Value(ValueError::NetTcp)),
        ),
        (
            "[tools.a]\nnetwork = [{ tcp = true }]",
            "tools.a.network[0].host",
            "host = ",
            |p| matches!(p, ConfigProblem::Value(ValueError::NetHostMissing)),
        ),
        (
            "[tools.a]\nnetwork = [{ host = \"a.com:1\", headers = { X = 1 } }]",
            "tools.a.network[0].headers.X",
            "a string",
            |p| matches!(p, ConfigProblem::Value(ValueError::NetHeaderType)),
        ),
        (
            "[tools.a]\nnetwork = [5]",
            "tools.a.network[0]",
            "\"host:port\"",
            |p| matches!(p, ConfigProblem::Value(ValueError::NetEntry(_))),
        ),
        (
            "[tools.a]\nmemory = \"lots\"",
            "tools.a.memory",
            "such as \"64MiB\"",
            |p| matches!(p, ConfigProblem::Value(ValueError::Size(_))),
        ),
        (
            "[tools.a]\ntimeout = \"5\"",
            "tools.a.timeout",
            "such as \"5s\"",
            |p| matches!(p, ConfigProblem::Value(ValueError::Duration(_))),
        ),
        (
            "[tools.a]\non_trap = \"ignore\"",
            "",
            "unknown variant `ignore`",
            |p| matches!(p, ConfigProblem::Toml(_)),
        ),
        (
            "[tools.a]\nname = \"two words\"",
            "tools.a.name",
            "is not allowed",
            |p| matches!(p, ConfigProblem::ToolName(_)),
        ),
        (
            "[tools.a]\nenv = { \"A=B\" = \"x\" }",
            "tools.a.env",
            "not a variable name",
            |p| matches!(p, ConfigProblem::EnvName(_)),
        ),
        ("[tools.a", "", "piton.toml", |p| {
            matches!(p, ConfigProblem::Toml(_))
        }),
        (
            "[tools.a]\nsha256 = \"ab\"",
            "tools.a.sha256",
            "not the 64 hexadecimal",
            |p| matches!(p, ConfigProblem::Pin(PinError::Length { .. })),
        ),
        (
            "[plugins.\"a.wasm\"]\nsha256 = 1",
            "",
            "invalid type",
            |p| matches!(p, ConfigProblem::Toml(_)),
        ),
        (
            "[plugins.\"a.wasm\"]",
            "plugins.\"a.wasm\".sha256",
            "is missing",
            |p| matches!(p, ConfigProblem::Pin(PinError::Missing)),
        ),
        (
            "[plugins.\"a\"]\nsha256 = \"\"",
            "plugins.\"a\"",
            "ending in .wasm",
            |p| matches!(p, ConfigProblem::Pin(PinError::FileName)),
        ),
        (
            "[cache]\nmax_size = \"lots\"",
            "cache.max_size",
            "such as \"64MiB\"",
            |p| matches!(p, ConfigProblem::Value(ValueError::Size(_))),
        ),
    ];
    for (text, key, message, is) in cases {
        let error = parse(text).unwrap_err();
        assert_eq!(error.key, *key, "{text}: {error}");
        assert!(is(&error.problem), "{text}: {:?}", error.problem);
        let shown = error.to_string();
        assert!(shown.contains(message), "{text}: {shown}");
        assert!(shown.contains("piton.toml"), "{shown}");
    }
}

#[test]
fn pins_of_files_and_tools_parse_and_a_pin_alone_configures_nothing() {
    let digest = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
    let config = parse(&format!(
        "[plugins.\"a.wasm\"]\nsha256 = \"{digest}\"\n[tools.b]\nsha256 = \"{digest}\"\n"
    ))
    .unwrap();
    assert_eq!(
        config.pins.files["a.wasm"].to_string(),
        digest.to_lowercase()
    );
    assert_eq!(config.pins.tools["b"].to_string(), digest.to_lowercase());
    assert_eq!(config.tools["b"], ToolConfig::default());
    assert_eq!(config.cache, CacheSettings::default());
}

#[test]
fn a_mistake_of_the_whole_file_names_no_key() {
    let error = parse("[tools.a]\nmounts = [").unwrap_err();
    assert!(error.key.is_empty());
    let message = error.to_string();
    let file = std::env::temp_dir().join("piton.toml");
    let start = format!("{}: TOML parse error", file.display());
    assert!(message.starts_with(&start), "{message}");
}
