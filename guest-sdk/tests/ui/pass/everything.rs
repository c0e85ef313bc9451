//! Every option and return shape at once, with the user's own serde types.
use piton_guest_sdk::{Hints, Image, Tool, ToolError, schemars, serde, serde_json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(crate = "piton_guest_sdk::serde")]
#[schemars(crate = "piton_guest_sdk::schemars")]
struct Target {
    url: String,
}

fn fetch_hints(args: &serde_json::Value) -> Option<Hints> {
    args.get("dry_run")?.as_bool()?.then(Hints::read_only)
}

mod nested {
    /// Fetch a page and screenshot it.
    ///
    /// # Arguments
    ///
    /// * `target` - What to fetch
    /// * `dry_run` - Only say what would happen
    #[piton_guest_sdk::tool(
        name = "fetch-page",
        description = "Fetch a page.",
        parallel = false,
        read_only = false,
        destructive = false,
        idempotent = true,
        open_world,
        hints_for = super::fetch_hints
    )]
    pub(crate) fn fetch(
        target: super::Target,
        dry_run: Option<bool>,
        #[serde(default)] mut retries: u8,
    ) -> Result<Vec<super::Image>, super::ToolError> {
        retries += 1;
        if target.url.is_empty() || retries == 0 {
            return Err(super::ToolError::input("url is empty"));
        }
        Ok(if dry_run == Some(true) { Vec::new() } else { vec![super::Image::png(vec![0])] })
    }
}

fn main() {
    use nested::FetchTool;
    assert_eq!(FetchTool::spec().name, "fetch-page");
    assert_eq!(FetchTool::hints_for(r#"{"dry_run": true}"#), Some(Hints::read_only()));
    assert_eq!(
        FetchTool::run(r#"{"target": {"url": ""}}"#),
        Err(ToolError::input("url is empty"))
    );
}
