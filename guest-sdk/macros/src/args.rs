//! The options of `#[tool(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Path, Token};

const OPTIONS: &str = "name, description, parallel, read_only, destructive, idempotent, \
     open_world, hints_for, export";

/// The options of one `#[tool(...)]`, checked.
pub(crate) struct Options {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) parallel: bool,
    pub(crate) hints_for: Option<Path>,
    pub(crate) hints: Hints,
    /// False: the tool is not exported on its own, but listed in a `toolbox!`.
    pub(crate) export: bool,
}

/// The tool's own hints, with the seed's defaults applied.
pub(crate) use piton_wit::Hints;

/// A bool option, with the option as written for errors.
#[derive(Clone)]
struct Flag {
    value: bool,
    meta: Meta,
}

#[derive(Default)]
struct Raw {
    name: Option<LitStr>,
    description: Option<LitStr>,
    parallel: Option<Flag>,
    read_only: Option<Flag>,
    destructive: Option<Flag>,
    idempotent: Option<Flag>,
    open_world: Option<Flag>,
    hints_for: Option<Path>,
    export: Option<Flag>,
}

impl Options {
    pub(crate) fn parse(attr: TokenStream) -> syn::Result<Self> {
        let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
        let mut raw = Raw::default();
        let mut errors = Errors::default();
        for meta in &metas {
            errors.push(raw.set(meta));
        }
        errors.finish()?;
        let hints = raw.hints()?;
        if let Some(name) = &raw.name {
            check_name(&name.value(), name.span())?;
        }
        if let Some(description) = &raw.description
            && description.value().trim().is_empty()
        {
            return Err(syn::Error::new(
                description.span(),
                "the description is what the model reads about the tool: it cannot be empty",
            ));
        }
        Ok(Self {
            name: raw.name,
            description: raw.description,
            parallel: raw.parallel.is_none_or(|flag| flag.value),
            hints_for: raw.hints_for,
            hints,
            export: raw.export.is_none_or(|flag| flag.value),
        })
    }
}

impl Raw {
    fn set(&mut self, meta: &Meta) -> syn::Result<()> {
        let Some(key) = meta.path().get_ident().map(ToString::to_string) else {
            return Err(unknown(meta.path()));
        };
        match key.as_str() {
            "name" => put(&mut self.name, string(meta, &key)?, meta, &key),
            "description" => put(&mut self.description, string(meta, &key)?, meta, &key),
            "parallel" => put(&mut self.parallel, flag(meta, &key)?, meta, &key),
            "read_only" => put(&mut self.read_only, flag(meta, &key)?, meta, &key),
            "destructive" => put(&mut self.destructive, flag(meta, &key)?, meta, &key),
            "idempotent" => put(&mut self.idempotent, flag(meta, &key)?, meta, &key),
            "open_world" => put(&mut self.open_world, flag(meta, &key)?, meta, &key),
            "hints_for" => put(&mut self.hints_for, path(meta, &key)?, meta, &key),
            "export" => put(&mut self.export, flag(meta, &key)?, meta, &key),
            _ => Err(unknown(meta.path())),
        }
    }

    /// The seed's rules: a hint left out is the worst case, and `read_only`
    /// decides `destructive` and `idempotent`, so contradicting it is an error.
    fn hints(&self) -> syn::Result<Hints> {
        let given = |flag: &Option<Flag>, default| flag.as_ref().map_or(default, |flag| flag.value);
        let read_only = given(&self.read_only, false);
        let hints = Hints::new(
            read_only,
            given(&self.destructive, !read_only),
            given(&self.idempotent, read_only),
            given(&self.open_world, true),
        );
        let contradiction = match hints {
            Ok(hints) => return Ok(hints),
            Err(contradiction) => contradiction,
        };
        let mut errors = Errors::default();
        if let Some(flag) = self.destructive.as_ref().filter(|flag| flag.value) {
            errors.push(Err(syn::Error::new_spanned(
                &flag.meta,
                "a read-only tool cannot be destructive: `read_only` already sets \
                 `destructive = false`; drop one of the two",
            )));
        }
        if let Some(flag) = self.idempotent.as_ref().filter(|flag| !flag.value) {
            errors.push(Err(syn::Error::new_spanned(
                &flag.meta,
                "a read-only tool is always idempotent: `read_only` already sets \
                 `idempotent = true`; drop one of the two",
            )));
        }
        errors.finish()?;
        Err(syn::Error::new(Span::call_site(), contradiction))
    }
}

/// Checks a tool name against the `[A-Za-z0-9_-]{1,64}` of `piton:tool`.
pub(crate) fn check_name(name: &str, span: Span) -> syn::Result<()> {
    if piton_wit::check_tool_name(name).is_ok() {
        return Ok(());
    }
    Err(syn::Error::new(
        span,
        format!(
            "invalid tool name `{name}`: a name is 1 to 64 ASCII letters, digits, `_` or `-`; \
             give another with `name = \"...\"`"
        ),
    ))
}

fn put<T>(slot: &mut Option<T>, value: T, meta: &Meta, key: &str) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            meta.span(),
            format!("`{key}` is given twice"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn unknown(path: &Path) -> syn::Error {
    let written = quote::ToTokens::to_token_stream(path)
        .to_string()
        .replace(' ', "");
    syn::Error::new(
        path.span(),
        format!("unknown option `{written}`; the options are {OPTIONS}"),
    )
}

fn value<'a>(meta: &'a Meta, key: &str, example: &str) -> syn::Result<&'a Expr> {
    match meta {
        Meta::NameValue(name_value) => Ok(&name_value.value),
        _ => Err(syn::Error::new_spanned(
            meta,
            format!("`{key}` takes a value: `{key} = {example}`"),
        )),
    }
}

fn string(meta: &Meta, key: &str) -> syn::Result<LitStr> {
    match value(meta, key, "\"...\"")? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` takes a string literal: `{key} = \"...\"`"),
        )),
    }
}

/// A bool option: bare (`read_only`) means true.
fn flag(meta: &Meta, key: &str) -> syn::Result<Flag> {
    let meta_flag = |value| Flag {
        value,
        meta: meta.clone(),
    };
    match meta {
        Meta::Path(_) => Ok(meta_flag(true)),
        Meta::NameValue(name_value) => match &name_value.value {
            Expr::Lit(ExprLit {
                lit: Lit::Bool(lit),
                ..
            }) => Ok(meta_flag(lit.value)),
            other => Err(syn::Error::new(
                other.span(),
                format!("`{key}` takes `true` or `false`: `{key} = true`, or `{key}` alone"),
            )),
        },
        Meta::List(_) => Err(syn::Error::new_spanned(
            meta,
            format!("write `{key} = true` or `{key} = false`, or `{key}` alone for true"),
        )),
    }
}

fn path(meta: &Meta, key: &str) -> syn::Result<Path> {
    match value(meta, key, "path::to::function")? {
        Expr::Path(expr) if expr.qself.is_none() => Ok(expr.path.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!(
                "`{key}` takes the path of a `fn(&serde_json::Value) -> Option<Hints>`: \
                 `{key} = my_hints`"
            ),
        )),
    }
}

/// Gathers errors so that one compile shows them all.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, result: syn::Result<()>) {
        if let Err(error) = result {
            match &mut self.0 {
                Some(first) => first.combine(error),
                None => self.0 = Some(error),
            }
        }
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::{Hints, Options};
    use quote::quote;

    fn hints(attr: proc_macro2::TokenStream) -> Hints {
        match Options::parse(attr) {
            Ok(options) => options.hints,
            Err(error) => panic!("unexpected error: {error}"),
        }
    }

    fn error(attr: proc_macro2::TokenStream) -> String {
        match Options::parse(attr) {
            Ok(_) => panic!("expected an error"),
            Err(error) => error.to_string(),
        }
    }

    fn hint(read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> Hints {
        Hints::new(read_only, destructive, idempotent, open_world).unwrap()
    }

    #[test]
    fn hints_left_out_are_the_worst_case() {
        assert_eq!(hints(quote!()), hint(false, true, false, true));
        assert_eq!(
            hints(quote!(read_only = false)),
            hint(false, true, false, true)
        );
        assert_eq!(
            hints(quote!(destructive = false, idempotent)),
            hint(false, false, true, true)
        );
    }

    #[test]
    fn read_only_decides_destructive_and_idempotent() {
        assert_eq!(hints(quote!(read_only)), hint(true, false, true, true));
        assert_eq!(
            hints(quote!(read_only, open_world = false)),
            hint(true, false, true, false)
        );
        assert_eq!(
            hints(quote!(
                read_only = true,
                destructive = false,
                idempotent = true
            )),
            hint(true, false, true, true)
        );
    }

    #[test]
    fn read_only_contradictions_are_errors() {
        assert!(error(quote!(read_only, destructive = true)).contains("cannot be destructive"));
        assert!(error(quote!(read_only, destructive)).contains("cannot be destructive"));
        assert!(error(quote!(read_only, idempotent = false)).contains("always idempotent"));
    }

    #[test]
    fn other_options() {
        let options = Options::parse(quote!(
            name = "wc",
            description = "Counts.",
            parallel = false,
            hints_for = my::hints
        ));
        let Ok(options) = options else {
            panic!("valid options")
        };
        assert_eq!(options.name.map(|name| name.value()).as_deref(), Some("wc"));
        assert_eq!(
            options.description.map(|d| d.value()).as_deref(),
            Some("Counts.")
        );
        assert!(!options.parallel);
        assert!(options.hints_for.is_some());
        assert!(matches!(Options::parse(quote!()), Ok(options) if options.parallel));
    }

    #[test]
    fn bad_options() {
        assert!(
            error(quote!(readonly)).contains("unknown option `readonly`; the options are name,")
        );
        assert!(error(quote!(a::b)).contains("unknown option `a::b`"));
        assert!(error(quote!(read_only = "yes")).contains("takes `true` or `false`"));
        assert!(error(quote!(open_world(false))).contains("write `open_world = true`"));
        assert!(error(quote!(name = "has space")).contains("invalid tool name `has space`"));
        assert!(error(quote!(name = "")).contains("invalid tool name ``"));
        let long = "x".repeat(65);
        assert!(error(quote!(name = #long)).contains("invalid tool name"));
        assert!(error(quote!(name)).contains("`name` takes a value"));
        assert!(error(quote!(description = 3)).contains("takes a string literal"));
        assert!(error(quote!(description = " ")).contains("cannot be empty"));
        assert!(error(quote!(hints_for = "f")).contains("takes the path"));
        assert!(error(quote!(parallel, parallel = false)).contains("`parallel` is given twice"));
    }

    #[test]
    fn names_at_the_limits() {
        let longest = "a".repeat(64);
        assert!(Options::parse(quote!(name = #longest)).is_ok());
        assert!(Options::parse(quote!(name = "A-z_09")).is_ok());
    }
}
