//! The code `#[tool]` generates.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, LitStr};

use crate::args::{self, Errors, Hints, Options};
use crate::docs::{self, Docs};
use crate::signature::{self, Output, Param};

/// Turns a tool function into the function itself, a unit struct implementing
/// `piton_guest_sdk::Tool`, and the component export of that struct.
pub(crate) fn expand(options: Options, mut function: ItemFn) -> syn::Result<TokenStream> {
    signature::check(&function.sig)?;
    let params = signature::params(&mut function.sig)?;
    let docs = docs::parse(&function.attrs)?;
    let fn_ident = function.sig.ident.clone();
    let name = match &options.name {
        Some(name) => name.value(),
        None => {
            let name = fn_ident.unraw().to_string();
            args::check_name(&name, fn_ident.span())?;
            name
        }
    };
    let description = match &options.description {
        Some(description) => description.value(),
        None if docs.description.is_empty() => {
            return Err(syn::Error::new(
                fn_ident.span(),
                "a tool needs a description for the model: write a doc comment, \
                 or give `description = \"...\"`",
            ));
        }
        None => docs.description.clone(),
    };
    check_arg_docs(&docs, &params, &fn_ident)?;

    let tool = format_ident!(
        "{}Tool",
        upper_camel(&fn_ident.unraw().to_string()),
        span = fn_ident.span()
    );
    let vis = &function.vis;
    let tool_doc = format!(
        "The tool `{name}`, made by `#[tool]` from `{fn_ident}`: \
         `piton_guest_sdk::Tool::run` calls it as the host does."
    );
    let args_struct = args_struct(&params, &docs);
    let hints = hints(options.hints);
    let has_hints_for = options.hints_for.is_some();
    let hints_for = options.hints_for.as_ref().map(|path| {
        quote_spanned! {path.span()=>
            fn hints_for(__piton_json: &str) -> ::core::option::Option<::piton_guest_sdk::Hints> {
                let __piton_hints_for: fn(
                    &::piton_guest_sdk::__private::serde_json::Value,
                ) -> ::core::option::Option<::piton_guest_sdk::Hints> = #path;
                ::piton_guest_sdk::__private::hints_for(__piton_json, __piton_hints_for)
            }
        }
    });
    let parallel = options.parallel;
    // `export = false`: a `toolbox!` of the crate exports it with the others.
    let export = options
        .export
        .then(|| quote!(::piton_guest_sdk::export!(#tool);));
    let idents: Vec<&Ident> = params.iter().map(|param| &param.ident).collect();
    let name = LitStr::new(&name, fn_ident.span());
    let output = convert_output(&signature::output(&function.sig), &name);

    Ok(quote! {
        #function

        #[doc = #tool_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #tool;

        const _: () = {
            #args_struct

            impl ::piton_guest_sdk::Tool for #tool {
                fn spec() -> ::piton_guest_sdk::ToolSpec {
                    ::piton_guest_sdk::ToolSpec {
                        name: ::std::string::String::from(#name),
                        description: ::std::string::String::from(#description),
                        input_schema: ::piton_guest_sdk::__private::input_schema::<__PitonToolArgs>(),
                        parallel: #parallel,
                    }
                }

                fn hints() -> ::piton_guest_sdk::Hints {
                    #hints
                }

                const HAS_HINTS_FOR: bool = #has_hints_for;

                #hints_for

                // Locals are `__piton_` names: a parameter or a function of the
                // user's could have any other name, and shadowing it would break
                // the call below.
                fn run(
                    __piton_json: &str,
                ) -> ::core::result::Result<
                    ::std::vec::Vec<::piton_guest_sdk::Content>,
                    ::piton_guest_sdk::ToolError,
                > {
                    #[allow(unused_variables)] // when the tool takes no parameters
                    let __piton_args =
                        ::piton_guest_sdk::__private::parse_args::<__PitonToolArgs>(__piton_json)?;
                    let __piton_output = #fn_ident(#(__piton_args.#idents),*);
                    #output
                }
            }
        };

        #export
    })
}

/// A name in the `Args:` section that is no parameter is most likely a typo
/// or a renamed parameter: the model would never see that description.
fn check_arg_docs(docs: &Docs, params: &[Param], fn_ident: &Ident) -> syn::Result<()> {
    let mut errors = Errors::default();
    for arg in &docs.args {
        if !params.iter().any(|param| param.name == arg.name) {
            errors.push(Err(syn::Error::new(
                arg.span,
                format!(
                    "the doc comment describes `{}`, which is not a parameter of `{fn_ident}`",
                    arg.name
                ),
            )));
        }
    }
    errors.finish()
}

/// The struct the arguments are deserialized into and the schema made from.
/// Its name cannot clash with the user's types that the field types name.
fn args_struct(params: &[Param], docs: &Docs) -> TokenStream {
    let fields = params.iter().map(|param| {
        let Param {
            ident, ty, attrs, ..
        } = param;
        let description = docs
            .args
            .iter()
            .find(|arg| arg.name == param.name && !arg.description.is_empty())
            .map(|arg| {
                let text = &arg.description;
                quote!(#[schemars(description = #text)])
            });
        quote! {
            #description
            #(#attrs)*
            #ident: #ty
        }
    });
    quote! {
        #[derive(
            ::piton_guest_sdk::__private::serde::Deserialize,
            ::piton_guest_sdk::__private::schemars::JsonSchema,
        )]
        #[serde(crate = "::piton_guest_sdk::__private::serde")]
        #[schemars(crate = "::piton_guest_sdk::__private::schemars")]
        struct __PitonToolArgs {
            #(#fields,)*
        }
    }
}

fn hints(hints: Hints) -> TokenStream {
    let (destructive, idempotent, open_world) = (
        hints.is_destructive(),
        hints.is_idempotent(),
        hints.is_open_world(),
    );
    if hints.is_read_only() {
        quote!(::piton_guest_sdk::Hints::read_only().open_world(#open_world))
    } else {
        quote! {
            ::piton_guest_sdk::Hints::worst()
                .destructive(#destructive)
                .idempotent(#idempotent)
                .open_world(#open_world)
        }
    }
}

/// Converts `output` into the run's result. The conversion of a value is
/// picked by autoref specialization (see `__private::Wrap`), spanned at the
/// return type so that a type that is neither content nor `Serialize` is
/// reported there.
fn convert_output(output: &Output<'_>, name: &LitStr) -> TokenStream {
    let contents = |value: TokenStream, span: proc_macro2::Span| {
        quote_spanned! {span=>
            {
                #[allow(unused_imports)]
                use ::piton_guest_sdk::__private::{ViaDirect as _, ViaJson as _};
                (&&::piton_guest_sdk::__private::Wrap::new(#value)).__piton_contents(#name)
            }
        }
    };
    match output {
        Output::Plain(ty) => {
            let span = ty
                .as_ref()
                .map_or_else(proc_macro2::Span::call_site, Spanned::span);
            let contents = contents(quote!(__piton_output), span);
            quote!(::core::result::Result::Ok(#contents))
        }
        Output::Result { ok, err } => {
            let contents = contents(quote!(__piton_value), ok.span());
            // Naming the type in the call puts an error about it on the whole type.
            let error = quote! {
                <#err as ::piton_guest_sdk::__private::IsToolError>::into_tool_error(__piton_error)
            };
            quote! {
                match __piton_output {
                    ::core::result::Result::Ok(__piton_value) => ::core::result::Result::Ok(#contents),
                    ::core::result::Result::Err(__piton_error) => ::core::result::Result::Err(#error),
                }
            }
        }
    }
}

/// `word_count` → `WordCount`.
fn upper_camel(snake: &str) -> String {
    snake
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars))
                .into_iter()
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::upper_camel;

    #[test]
    fn camel_case() {
        assert_eq!(upper_camel("word_count"), "WordCount");
        assert_eq!(upper_camel("_private__fn2"), "PrivateFn2");
        assert_eq!(upper_camel("Fetch"), "Fetch");
    }
}
