//! Rewrites the performance tables of docs/performance.md from the figures of one benchmark run.
//!
//! `host/benches/report` runs every benchmark with `$PITON_BENCH_RECORD` set, so each
//! appends its figures there as JSON lines (see `support/mod.rs`), then runs this:
//!
//! `cargo bench -p piton-host --bench report -- RECORD docs/performance.md DATE COMMIT`
//!
//! Each table sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in the
//! page; everything outside those markers is left as it is. A figure the run did
//! not produce shows as `–` and is listed on stderr. Without arguments (as `cargo
//! test` and a plain `cargo bench` run it) it checks itself on a built-in record.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One figure of the record: its value, unit and the 1-minute load when taken.
#[derive(Clone, Debug)]
struct Figure {
    value: f64,
    unit: String,
    load: f64,
}

/// The figures of one run, by `bench/key`.
#[derive(Debug, Default)]
struct Record {
    figures: BTreeMap<String, Figure>,
}

impl Record {
    /// Parses the JSON lines; a later line for the same figure wins.
    fn parse(text: &str) -> Result<Self, String> {
        let mut figures = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", n + 1))?;
            let field = |name: &str| {
                value
                    .get(name)
                    .ok_or_else(|| format!("line {}: no `{name}`", n + 1))
            };
            let text_of = |name: &str| {
                field(name)?
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("line {}: `{name}` is not text", n + 1))
            };
            let id = format!("{}/{}", text_of("bench")?, text_of("key")?);
            let figure = Figure {
                value: field("value")?.as_f64().unwrap_or(f64::NAN),
                unit: text_of("unit")?,
                load: field("load")?.as_f64().unwrap_or(f64::NAN),
            };
            figures.insert(id, figure);
        }
        Ok(Self { figures })
    }

    /// The lowest and highest load seen while measuring.
    fn load_range(&self) -> Option<(f64, f64)> {
        let loads = self
            .figures
            .values()
            .map(|f| f.load)
            .filter(|l| l.is_finite());
        loads.fold(None, |range, load| match range {
            None => Some((load, load)),
            Some((low, high)) => Some((f64::min(low, load), f64::max(high, load))),
        })
    }
}

/// One row of a table: a label, then cells (a cell is figures joined by " / "),
/// then a last column of text (a target), if the table has one.
struct Row {
    label: &'static str,
    cells: &'static [&'static [&'static str]],
    then: Option<&'static str>,
}

/// A table: its region name in the page, its header and rows.
struct Table {
    region: &'static str,
    header: &'static [&'static str],
    rows: &'static [Row],
}

const TABLES: &[Table] = &[
    Table {
        region: "speed",
        header: &["", "measured (median / p99 where two)", "target"],
        rows: &[
            Row {
                label: "`word_count` in a fresh instance, in process",
                cells: &[&["call/fresh_median", "call/fresh_p99"]],
                then: Some("≤ 10 µs"),
            },
            Row {
                label: "the same in one reused instance (not piton's way: the floor)",
                cells: &[&["call/reused_median"]],
                then: Some(""),
            },
            Row {
                label: "fresh / reused",
                cells: &[&["call/fresh_over_reused"]],
                then: Some("≤ 5x"),
            },
            Row {
                label: "what the consent policy (`not-read-only`, as `serve` follows it) adds to a read-only native call it does not ask about",
                cells: &[&["call/native_with_consent_added"]],
                then: Some("≤ 1 µs"),
            },
            Row {
                label: "a Python tool (`word_count`) over MCP stdio, raw JSON-RPC lines: piton",
                cells: &[&["python/piton_median", "python/piton_p99"]],
                then: Some(""),
            },
            Row {
                label: "the same function served natively by the official Python SDK (no sandbox)",
                cells: &[&["python/python-sdk_median", "python/python-sdk_p99"]],
                then: Some(""),
            },
            Row {
                label: "piton / Python SDK",
                cells: &[&["python/ratio"]],
                then: Some("≤ 1.0x (0.5x)"),
            },
            Row {
                label: "the same calls 20 ms apart, as an agent's come: piton (its next instance made while the client is away)",
                cells: &[&["python/spaced_piton_median", "python/spaced_piton_p99"]],
                then: Some(""),
            },
            Row {
                label: "the Python SDK, calls 20 ms apart",
                cells: &[&[
                    "python/spaced_python-sdk_median",
                    "python/spaced_python-sdk_p99",
                ]],
                then: Some(""),
            },
            Row {
                label: "piton / Python SDK, calls 20 ms apart",
                cells: &[&["python/spaced_ratio"]],
                then: Some(""),
            },
            Row {
                label: "an `echo` tool over MCP stdio, raw JSON-RPC lines: piton (Rust component)",
                cells: &[&["mcp/echo_piton_median", "mcp/echo_piton_p99"]],
                then: Some(""),
            },
            Row {
                label: "the same tool served natively by `@modelcontextprotocol/server-everything` (Node.js, no sandbox)",
                cells: &[&["mcp/echo_everything_median", "mcp/echo_everything_p99"]],
                then: Some(""),
            },
            Row {
                label: "piton / server-everything",
                cells: &[&["mcp/echo_ratio"]],
                then: Some(""),
            },
            Row {
                label: "MCP `tools/call` over stdio, rmcp client (multi-thread runtime)",
                cells: &[&["mcp/stdio_rmcp_median", "mcp/stdio_rmcp_p99"]],
                then: Some("≤ 0.10 ms"),
            },
            Row {
                label: "the same, rmcp client on a current-thread runtime",
                cells: &[&[
                    "mcp/stdio_rmcp_current_thread_median",
                    "mcp/stdio_rmcp_current_thread_p99",
                ]],
                then: Some("≤ 0.10 ms"),
            },
            Row {
                label: "MCP `tools/call` over stdio, raw JSON-RPC lines",
                cells: &[&["mcp/stdio_raw_median", "mcp/stdio_raw_p99"]],
                then: Some("≤ 0.08 ms"),
            },
            Row {
                label: "the server's CPU per stdio call (user + sys over 20 000 calls, start and stop taken out)",
                cells: &[&["mcp/server_cpu_per_call_net"]],
                then: Some("≤ 50 µs"),
            },
            Row {
                label: "`serve --http`: the server's CPU per stateless 2026-07-28 call / stdio's, 64 kept-alive clients",
                cells: &[&["http/cpu_ratio_c64"]],
                then: Some("≤ 1.5x"),
            },
            Row {
                label: "`serve --http`: calls/s from 64 kept-alive clients",
                cells: &[&["http/http_c64_rps"]],
                then: Some("≥ 15 000 calls/s"),
            },
            Row {
                label: "fresh-instance calls/s in process, 1 caller",
                cells: &[&["call/throughput_c1"]],
                then: Some(""),
            },
            Row {
                label: "the same, 2 / 4 / 8 concurrent callers",
                cells: &[&[
                    "call/throughput_c2",
                    "call/throughput_c4",
                    "call/throughput_c8",
                ]],
                then: Some("≥ 100 000 calls/s"),
            },
            Row {
                label: "2 callers / 1",
                cells: &[&["call/throughput_c2_over_c1"]],
                then: Some("≥ 1x"),
            },
        ],
    },
    Table {
        region: "start",
        header: &[
            "plugins",
            "`serve` to its first `tools/list`, cold cache",
            "then the first call of its last tool",
            "warm cache (median / p99)",
            "CPU, cold / warm",
            "resident memory idle",
        ],
        rows: &[
            Row {
                label: "1",
                cells: &[
                    &["start/cold_1"],
                    &["start/cold_first_call_1"],
                    &["start/warm_1", "start/warm_p99_1"],
                    &["start/cold_cpu_1", "start/warm_cpu_1"],
                    &["start/idle_1_rss"],
                ],
                then: None,
            },
            Row {
                label: "10",
                cells: &[
                    &["start/cold_10"],
                    &["start/cold_first_call_10"],
                    &["start/warm_10", "start/warm_p99_10"],
                    &["start/cold_cpu_10", "start/warm_cpu_10"],
                    &[],
                ],
                then: None,
            },
            Row {
                label: "100",
                cells: &[
                    &["start/cold_100"],
                    &["start/cold_first_call_100"],
                    &["start/warm_100", "start/warm_p99_100"],
                    &["start/cold_cpu_100", "start/warm_cpu_100"],
                    &["start/idle_100_rss"],
                ],
                then: None,
            },
            Row {
                label: "100, built by `piton build` (specs in the component)",
                cells: &[
                    &["start/cold_100_built"],
                    &["start/cold_first_call_100_built"],
                    &["start/warm_100_built", "start/warm_p99_100_built"],
                    &["start/cold_cpu_100_built", "start/warm_cpu_100_built"],
                    &[],
                ],
                then: None,
            },
        ],
    },
    Table {
        region: "memory",
        header: &["calls in flight", "resident memory per call"],
        rows: &[
            Row {
                label: "1",
                cells: &[&["start/rss_per_call_1"]],
                then: None,
            },
            Row {
                label: "16",
                cells: &[&["start/rss_per_call_16"]],
                then: None,
            },
            Row {
                label: "64",
                cells: &[&["start/rss_per_call_64"]],
                then: None,
            },
        ],
    },
    Table {
        region: "throughput",
        header: &[
            "concurrent clients",
            "`serve --http`: calls/s",
            "median / p99",
            "server CPU per call",
            "`serve` on stdio: calls/s",
            "median / p99",
            "server CPU per call",
            "server CPU per call, HTTP / stdio",
        ],
        rows: &[
            Row {
                label: "1",
                cells: &[
                    &["http/http_c1_rps"],
                    &["http/http_c1_median", "http/http_c1_p99"],
                    &["http/http_c1_server_cpu"],
                    &["http/stdio_c1_rps"],
                    &["http/stdio_c1_median", "http/stdio_c1_p99"],
                    &["http/stdio_c1_server_cpu"],
                    &["http/cpu_ratio_c1"],
                ],
                then: None,
            },
            Row {
                label: "16",
                cells: &[
                    &["http/http_c16_rps"],
                    &["http/http_c16_median", "http/http_c16_p99"],
                    &["http/http_c16_server_cpu"],
                    &["http/stdio_c16_rps"],
                    &["http/stdio_c16_median", "http/stdio_c16_p99"],
                    &["http/stdio_c16_server_cpu"],
                    &["http/cpu_ratio_c16"],
                ],
                then: None,
            },
            Row {
                label: "64",
                cells: &[
                    &["http/http_c64_rps"],
                    &["http/http_c64_median", "http/http_c64_p99"],
                    &["http/http_c64_server_cpu"],
                    &["http/stdio_c64_rps"],
                    &["http/stdio_c64_median", "http/stdio_c64_p99"],
                    &["http/stdio_c64_server_cpu"],
                    &["http/cpu_ratio_c64"],
                ],
                then: None,
            },
            Row {
                label: "256",
                cells: &[
                    &["http/http_c256_rps"],
                    &["http/http_c256_median", "http/http_c256_p99"],
                    &["http/http_c256_server_cpu"],
                    &["http/stdio_c256_rps"],
                    &["http/stdio_c256_median", "http/stdio_c256_p99"],
                    &["http/stdio_c256_server_cpu"],
                    &["http/cpu_ratio_c256"],
                ],
                then: None,
            },
        ],
    },
    Table {
        region: "langs",
        header: &[
            "language",
            "component",
            "build",
            "cold: tools listed / compiled",
            "cached load",
            "call, fresh instance (median / p99)",
            "the same, no instance made ahead",
            "least memory",
        ],
        rows: &[
            Row {
                label: "Rust",
                cells: &[
                    &["langs/rust_size"],
                    &["langs/rust_build"],
                    &["langs/rust_cold_listed", "langs/rust_cold_compile"],
                    &["langs/rust_cached_load"],
                    &["langs/rust_call_median", "langs/rust_call_p99"],
                    &["langs/rust_unready_median", "langs/rust_unready_p99"],
                    &["langs/rust_memory"],
                ],
                then: None,
            },
            Row {
                label: "Python",
                cells: &[
                    &["langs/python_size"],
                    &["langs/python_build"],
                    &["langs/python_cold_listed", "langs/python_cold_compile"],
                    &["langs/python_cached_load"],
                    &["langs/python_call_median", "langs/python_call_p99"],
                    &["langs/python_unready_median", "langs/python_unready_p99"],
                    &["langs/python_memory"],
                ],
                then: None,
            },
            Row {
                label: "JavaScript",
                cells: &[
                    &["langs/js_size"],
                    &["langs/js_build"],
                    &["langs/js_cold_listed", "langs/js_cold_compile"],
                    &["langs/js_cached_load"],
                    &["langs/js_call_median", "langs/js_call_p99"],
                    &["langs/js_unready_median", "langs/js_unready_p99"],
                    &["langs/js_memory"],
                ],
                then: None,
            },
            Row {
                label: "TypeScript",
                cells: &[
                    &["langs/ts_size"],
                    &["langs/ts_build"],
                    &["langs/ts_cold_listed", "langs/ts_cold_compile"],
                    &["langs/ts_cached_load"],
                    &["langs/ts_call_median", "langs/ts_call_p99"],
                    &["langs/ts_unready_median", "langs/ts_unready_p99"],
                    &["langs/ts_memory"],
                ],
                then: None,
            },
            Row {
                label: "C",
                cells: &[
                    &["langs/c_size"],
                    &["langs/c_build"],
                    &["langs/c_cold_listed", "langs/c_cold_compile"],
                    &["langs/c_cached_load"],
                    &["langs/c_call_median", "langs/c_call_p99"],
                    &["langs/c_unready_median", "langs/c_unready_p99"],
                    &["langs/c_memory"],
                ],
                then: None,
            },
            Row {
                label: "Go",
                cells: &[
                    &["langs/go_size"],
                    &["langs/go_build"],
                    &["langs/go_cold_listed", "langs/go_cold_compile"],
                    &["langs/go_cached_load"],
                    &["langs/go_call_median", "langs/go_call_p99"],
                    &["langs/go_unready_median", "langs/go_unready_p99"],
                    &["langs/go_memory"],
                ],
                then: None,
            },
        ],
    },
    Table {
        region: "code",
        header: &["code mode (`run_python`)", "median (/ p99)", "target"],
        rows: &[
            Row {
                label: "a run that calls no tool (`1 + 1`)",
                cells: &[&["code/empty_median", "code/empty_p99"]],
                then: Some(""),
            },
            Row {
                label: "a run that makes 10 `word_count` calls",
                cells: &[&["code/ten_calls_median"]],
                then: Some(""),
            },
            Row {
                label: "the same 10 calls made directly, one after another",
                cells: &[&["code/ten_direct_median"]],
                then: Some(""),
            },
            Row {
                label: "the run's own overhead over its 10 calls",
                cells: &[&["code/overhead_median"]],
                then: Some("≤ 1 ms"),
            },
        ],
    },
];

/// A figure as the table shows it: few digits, its unit.
fn show(figure: &Figure) -> String {
    let v = figure.value;
    match figure.unit.as_str() {
        // Two decimals near a target such as 1.5x, where one would round over it.
        "x" if v < 10.0 => format!("{v:.2}x"),
        "x" => format!("{v:.1}x"),
        "KiB" if v >= 1024.0 => format!("{:.1} MiB", v / 1024.0),
        "calls/s" | "requests/s" => format!("{} {}", thousands(v), figure.unit),
        unit if v >= 100.0 => format!("{v:.0} {unit}"),
        unit if v >= 10.0 => format!("{v:.1} {unit}"),
        unit if v >= 1.0 => format!("{v:.2} {unit}"),
        unit => format!("{v:.3} {unit}"),
    }
}

/// `v` rounded, with thin groups of three digits: `123 456`.
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// The table's markdown, and the figures it wanted but the record lacks.
fn render(table: &Table, record: &Record) -> (String, Vec<&'static str>) {
    let mut missing = Vec::new();
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", table.header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(table.header.len()));
    for row in table.rows {
        let mut cells = vec![row.label.to_owned()];
        for keys in row.cells {
            let shown: Vec<String> = keys
                .iter()
                .map(|key| match record.figures.get(*key) {
                    Some(figure) => show(figure),
                    None => {
                        missing.push(*key);
                        "–".to_owned()
                    }
                })
                .collect();
            cells.push(shown.join(" / "));
        }
        cells.extend(row.then.map(str::to_owned));
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    (out, missing)
}

/// `readme` with each table's region replaced, and a line under each giving the
/// run; the figures missing from the record.
fn rewrite(
    readme: &str,
    record: &Record,
    date: &str,
    commit: &str,
) -> Result<(String, Vec<&'static str>), String> {
    let mut readme = readme.to_owned();
    let mut missing = Vec::new();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = record
        .load_range()
        .map_or_else(|| "unknown".to_owned(), |(l, h)| format!("{l:.2}–{h:.2}"));
    for table in TABLES {
        let begin = format!("<!-- bench:{} -->", table.region);
        let end = format!("<!-- /bench:{} -->", table.region);
        let (Some(start), Some(stop)) = (readme.find(&begin), readme.find(&end)) else {
            return Err(format!(
                "the page has no `{begin}` … `{end}` region; put the two markers where \
                 the table goes"
            ));
        };
        if stop < start {
            return Err(format!("`{end}` comes before `{begin}` in the page"));
        }
        let (body, lacking) = render(table, record);
        missing.extend(lacking);
        let text = format!(
            "{begin}\n{body}\n(One run of `host/benches/report`: {date}, commit {commit}, \
             {cpus} CPUs, release build, 1-minute load average {load} while measuring.)\n"
        );
        readme.replace_range(start..stop, &text);
    }
    Ok((readme, missing))
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let [record, readme, date, commit] = args.as_slice() else {
        self_check();
        return;
    };
    let outcome = std::fs::read_to_string(record)
        .map_err(|e| format!("cannot read the record {record}: {e}"))
        .and_then(|text| Record::parse(&text).map_err(|e| format!("{record}: {e}")))
        .and_then(|parsed| {
            let text = std::fs::read_to_string(readme)
                .map_err(|e| format!("cannot read {readme}: {e}"))?;
            let (text, missing) = rewrite(&text, &parsed, date, commit)?;
            std::fs::write(readme, text).map_err(|e| format!("cannot write {readme}: {e}"))?;
            Ok(missing)
        });
    match outcome {
        Ok(missing) if missing.is_empty() => println!("rewrote the tables in {readme}"),
        Ok(missing) => {
            eprintln!(
                "rewrote the tables in {readme}; not measured in this run (shown as –): {}",
                missing.join(", ")
            );
        }
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}

/// Renders a built-in record into a README with each region and checks the result.
fn self_check() {
    let record = Record::parse(concat!(
        r#"{"bench":"call","key":"fresh_median","value":8.25,"unit":"µs","load":1.5}"#,
        "\n",
        r#"{"bench":"call","key":"fresh_median","value":9.5,"unit":"µs","load":1.25}"#,
        "\n\n",
        r#"{"bench":"langs","key":"python_size","value":19968,"unit":"KiB","load":2.0}"#,
        "\n",
        r#"{"bench":"call","key":"native_with_consent_added","value":212.4,"unit":"ns","load":2.0}"#,
        "\n",
    ))
    .unwrap_or_else(|e| panic!("the built-in record parses: {e}"));
    let readme = "# T\n\nbefore\n<!-- bench:speed -->\nSTALE TABLE\n<!-- /bench:speed -->\n\
                  mid\n<!-- bench:langs -->\n<!-- /bench:langs -->\nafter\n\
                  <!-- bench:throughput -->\n<!-- /bench:throughput -->\n\
                  <!-- bench:start -->\n<!-- /bench:start -->\n\
                  <!-- bench:memory -->\n<!-- /bench:memory -->\n\
                  <!-- bench:code -->\n<!-- /bench:code -->\n";
    let (out, missing) = rewrite(readme, &record, "2026-12-01", "abc1234")
        .unwrap_or_else(|e| panic!("rewrites: {e}"));
    assert!(
        out.starts_with("# T\n\nbefore\n<!-- bench:speed -->\n| "),
        "{out}"
    );
    assert!(out.contains("<!-- /bench:langs -->\nafter\n"), "{out}");
    assert!(out.ends_with("<!-- /bench:code -->\n"), "{out}");
    assert!(out.contains("\n<!-- /bench:speed -->\nmid\n"), "{out}");
    assert!(!out.contains("STALE"), "the old table is replaced: {out}");
    assert!(
        out.contains("| 9.50 µs / – |"),
        "the later line wins: {out}"
    );
    assert!(out.contains("| Python | 19.5 MiB |"), "{out}");
    assert!(
        out.contains("does not ask about | 212 ns | ≤ 1 µs |"),
        "the consent policy's cost: {out}"
    );
    assert!(out.contains("load average 1.25–2.00"), "{out}");
    assert!(out.contains("commit abc1234"), "{out}");
    assert!(missing.contains(&"call/fresh_p99") && !missing.contains(&"call/fresh_median"));
    // Rendering again gives the same README: the markers survive.
    let (again, _) = rewrite(&out, &record, "2026-12-01", "abc1234")
        .unwrap_or_else(|e| panic!("rewrites again: {e}"));
    assert_eq!(again, out);
    assert!(rewrite("no markers", &record, "d", "c").is_err());
    assert!(Record::parse("{\"bench\":\"call\"}").is_err());
    assert_eq!(thousands(123_456.4), "123 456");
    assert_eq!(thousands(999.0), "999");
    println!("report: self-check passed (give RECORD PAGE DATE COMMIT to rewrite a page)");
}
