use syn::{Attribute, parse_quote};

use super::{Docs, parse};

fn docs(attrs: Vec<Attribute>) -> Docs {
    match parse(&attrs) {
        Ok(docs) => docs,
        Err(error) => panic!("unexpected error: {error}"),
    }
}

fn error(attrs: Vec<Attribute>) -> String {
    match parse(&attrs) {
        Ok(docs) => panic!("expected an error, got {docs:?}"),
        Err(error) => error.to_string(),
    }
}

fn args(docs: &Docs) -> Vec<(&str, &str)> {
    docs.args
        .iter()
        .map(|arg| (arg.name.as_str(), arg.description.as_str()))
        .collect()
}

#[test]
fn description_is_the_first_paragraph_joined() {
    let docs = docs(parse_quote! {
        /// Count the words
        /// in a text.
        ///
        /// More details the model does not need.
    });
    assert_eq!(docs.description, "Count the words in a text.");
    assert!(docs.args.is_empty());
}

#[test]
fn no_docs() {
    let docs = docs(vec![parse_quote!(#[inline])]);
    assert_eq!(docs.description, "");
    assert!(docs.args.is_empty());
}

#[test]
fn google_args() {
    let docs = docs(parse_quote! {
        /// Count the words in a text.
        ///
        /// Args:
        ///     text: The text to count,
        ///         in any language
        ///     limit (int): Stop after this many
        ///
        ///     r#type: The kind of count
        ///
        /// Returns:
        ///     The count.
    });
    assert_eq!(docs.description, "Count the words in a text.");
    assert_eq!(
        args(&docs),
        [
            ("text", "The text to count, in any language"),
            ("limit", "Stop after this many"),
            ("type", "The kind of count"),
        ]
    );
}

#[test]
fn google_args_right_after_the_description() {
    let docs = docs(parse_quote! {
        /// Read a file.
        /// Args:
        ///   path: Path relative to the repository root
    });
    assert_eq!(docs.description, "Read a file.");
    assert_eq!(
        args(&docs),
        [("path", "Path relative to the repository root")]
    );
}

#[test]
fn block_doc_comment() {
    let docs = docs(vec![
        parse_quote!(#[doc = "Fetch a URL.\n\nArgs:\n    url: The URL\n"]),
    ]);
    assert_eq!(docs.description, "Fetch a URL.");
    assert_eq!(args(&docs), [("url", "The URL")]);
}

#[test]
fn google_entry_without_colon_is_an_error() {
    let message = error(parse_quote! {
        /// Do it.
        ///
        /// Args:
        ///     text The text
    });
    assert!(message.contains("expected `name: description`, found `text The text`"));
}

#[test]
fn rustdoc_arguments() {
    let docs = docs(parse_quote! {
        /// Count the words in a text.
        ///
        /// # Arguments
        ///
        /// The arguments are:
        ///
        /// * `text` - The text to count,
        ///   in any language
        /// * `limit`: Stop after this many
        /// - mode: How to count
        /// - `r#type` — The kind of count
        ///
        /// # Examples
        ///
        /// * `not_an_arg` - ignored
    });
    assert_eq!(docs.description, "Count the words in a text.");
    assert_eq!(
        args(&docs),
        [
            ("text", "The text to count, in any language"),
            ("limit", "Stop after this many"),
            ("mode", "How to count"),
            ("type", "The kind of count"),
        ]
    );
}

#[test]
fn rustdoc_lazy_continuation_and_code() {
    let docs = docs(parse_quote! {
        /// Run a command.
        ///
        /// ## Args
        /// * `command` - The command line
        /// passed to the shell
        ///
        /// ```text
        /// # Arguments
        /// * `fake` - inside a code block
        /// ```
        /// Trailing prose.
    });
    assert_eq!(
        args(&docs),
        [("command", "The command line passed to the shell")]
    );
}

#[test]
fn headings_inside_code_are_not_sections() {
    let docs = docs(parse_quote! {
        /// Do it.
        ///
        /// ```
        /// Args:
        ///     fake: nothing
        /// ```
    });
    assert!(docs.args.is_empty());
}

#[test]
fn rustdoc_item_without_name_is_an_error() {
    let message = error(parse_quote! {
        /// Do it.
        ///
        /// # Arguments
        ///
        /// * the text to count
    });
    assert!(message.contains("expected `* `name` - description`"));
}

#[test]
fn an_argument_described_twice_is_an_error() {
    let message = error(parse_quote! {
        /// Do it.
        ///
        /// Args:
        ///     text: one
        ///     text: two
    });
    assert_eq!(message, "argument `text` is described twice");
}

#[test]
fn a_leading_heading_leaves_no_description() {
    let docs = docs(parse_quote! {
        /// # Arguments
        /// * `text` - The text
    });
    assert_eq!(docs.description, "");
    assert_eq!(args(&docs), [("text", "The text")]);
}
