//! `piton inspect`: one tool's spec, schema and hints and, for a sandboxed tool, its
//! component, limits and the most a call may use, as text or JSON.

use std::io::{self, Write};

use serde_json::json;

use super::call::unknown;
use super::out::{Outcome, pretty, say};
use crate::config::pins::file_section;
use crate::error::CallError;
use crate::grants::NetAccess;
use crate::limits::format_size;
use crate::registry::Registry;
use crate::source::ToolSource;
use crate::term::Shown;

pub(super) async fn inspect(registry: &Registry, name: &str, as_json: bool) -> io::Result<Outcome> {
    let tool = match registry.find(name).await {
        Ok(tool) => tool,
        Err(CallError::UnknownTool { .. }) => return unknown(registry, name),
        Err(error) => {
            say(format_args!("error: {error}"));
            return Ok(Outcome::Stopped);
        }
    };
    let spec = tool.spec();
    let sandbox = tool.sandbox();
    let sandbox_json = sandbox.as_ref().map(|s| {
        let (limits, caps) = (&s.limits, &s.capabilities);
        json!({
            "limits": {
                "memory": format_size(limits.memory),
                "timeout": format!("{:?}", limits.timeout),
                "max_output": format_size(limits.max_output),
                "max_log": format_size(limits.max_log),
                "max_write": format_size(limits.max_write),
            },
            "on_trap": s.on_trap,
            "mounts": caps.mounts.iter().map(|(m, access)| json!({
                "guest": m.guest, "host": m.host, "granted": m.mode, "access": access,
            })).collect::<Vec<_>>(),
            "network": caps.network.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "network_access": caps.net_access,
            "env": caps.env.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        })
    });
    let pin = sandbox
        .as_ref()
        .and_then(|s| pin_lines(&tool.source(), &spec.name, &s.component.sha256));
    let report = json!({
        "name": spec.name,
        "description": spec.description,
        "parallel": spec.parallel,
        "input_schema": spec.input_schema,
        "hints": tool.hints(),
        "hints_are": tool.hints_trust(),
        "source": tool.source().to_string(),
        "component": sandbox.as_ref().map(|s| &s.component),
        "pin": pin.as_ref().map(|lines| lines.join("\n")),
        "sandbox": sandbox_json,
        "approval": registry.consent().map(|c| c.describe(tool.as_ref())),
    });
    let mut out = io::stdout().lock();
    let shown = Shown::stdout();
    if as_json {
        writeln!(out, "{}", shown.text(&pretty(&report)))?;
        return Ok(Outcome::Success);
    }
    writeln!(out, "name:        {}", shown.cell(&spec.name))?;
    writeln!(out, "description: {}", shown.text(&spec.description))?;
    writeln!(out, "parallel:    {}", spec.parallel)?;
    writeln!(
        out,
        "hints:       {} ({:?})",
        tool.hints(),
        tool.hints_trust()
    )?;
    writeln!(
        out,
        "source:      {}",
        shown.cell(&tool.source().to_string())
    )?;
    if let Some(consent) = registry.consent() {
        writeln!(out, "serve:       {}", consent.describe(tool.as_ref()))?;
    }
    if let Some(sandbox) = &sandbox {
        let info = &sandbox.component;
        writeln!(out, "size:        {} bytes", info.size)?;
        writeln!(out, "sha256:      {}", info.sha256)?;
        if let Some(lines) = &pin {
            writeln!(
                out,
                "pin it:      paste into piton.toml (see Pinning in docs/getting-tools.md):"
            )?;
            for line in lines {
                writeln!(out, "  {}", shown.cell(line))?;
            }
        }
        let l = &sandbox.limits;
        writeln!(
            out,
            "limits:      memory {}, timeout {:?}, output {}, log {}, write {}; on trap: {:?}",
            format_size(l.memory),
            l.timeout,
            format_size(l.max_output),
            format_size(l.max_log),
            format_size(l.max_write),
            sandbox.on_trap
        )?;
        let caps = &sandbox.capabilities;
        writeln!(
            out,
            "capabilities (at most; a call's hints-for can narrow them):"
        )?;
        if caps.mounts.is_empty() {
            writeln!(out, "  files:     none")?;
        }
        for (m, access) in &caps.mounts {
            writeln!(
                out,
                "  files:     {} = {} ({access:?}; granted {:?})",
                m.guest,
                m.host.display(),
                m.mode
            )?;
        }
        let network: Vec<String> = caps.network.iter().map(ToString::to_string).collect();
        let access = match caps.net_access {
            _ if network.is_empty() => "",
            NetAccess::ReadOnly => " (HTTP GET, HEAD, OPTIONS only)",
            NetAccess::Full => "",
        };
        writeln!(out, "  network:   {}{access}", list_or_none(&network))?;
        let env: Vec<String> = caps.env.iter().map(|(k, _)| k.clone()).collect();
        writeln!(out, "  env:       {}", list_or_none(&env))?;
        writeln!(out, "imports:")?;
        for import in &info.imports {
            writeln!(out, "  {}", shown.cell(import))?;
        }
    }
    writeln!(
        out,
        "input schema:\n{}",
        shown.text(&pretty(&spec.input_schema))
    )?;
    Ok(Outcome::Success)
}

/// `a, b`, or `none` for an empty list.
fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// The piton.toml lines that pin a tool from `source` to `sha256`: its file's
/// section for a plugins folder's file (which pins every tool the file gives), else
/// the tool's.
fn pin_lines(source: &ToolSource, name: &str, sha256: &str) -> Option<[String; 2]> {
    let section = match source {
        ToolSource::File(path) => file_section(path.file_name()?.to_str()?),
        ToolSource::Bundled(_) => format!("[tools.{name}]"),
        ToolSource::Native | ToolSource::Mcp(_) => return None,
    };
    Some([section, format!("sha256 = \"{sha256}\"")])
}
