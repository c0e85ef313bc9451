//! What a tool function may look like, and its parameters.

use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, Pat, PathArguments, ReturnType, Signature, Type,
};

use crate::args::Errors;

/// One parameter: a property of the input schema.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    /// The property name: the identifier without any `r#`.
    pub(crate) name: String,
    pub(crate) ty: Type,
    /// `#[serde(..)]` and `#[schemars(..)]`, moved to the args struct field.
    pub(crate) attrs: Vec<Attribute>,
}

/// What the function returns, as far as the macro can tell from its tokens.
pub(crate) enum Output<'a> {
    /// `Result<T, E>`: `T` goes through the conversion, `E` becomes a `ToolError`.
    Result { ok: &'a Type, err: &'a Type },
    /// Anything else, converted as a whole; `None` for `()`.
    Plain(Option<&'a Type>),
}

/// Checks what cannot be a tool, gathering every error.
pub(crate) fn check(sig: &Signature) -> syn::Result<()> {
    let mut errors = Errors::default();
    if let Some(token) = &sig.asyncness {
        errors.push(Err(syn::Error::new(
            token.span(),
            "a tool is a synchronous function: `async fn` is not supported",
        )));
    }
    if let Some(token) = &sig.unsafety {
        errors.push(Err(syn::Error::new(
            token.span(),
            "a tool function cannot be `unsafe`: the host calls it with any arguments",
        )));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(Err(syn::Error::new_spanned(
            &sig.generics,
            "a tool function cannot be generic: its parameters make one input schema",
        )));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(Err(syn::Error::new_spanned(
            variadic,
            "a tool function cannot be variadic",
        )));
    }
    errors.finish()
}

/// Takes the parameters out of the signature, leaving the function callable
/// as written: the attributes meant for the args struct are removed from it.
pub(crate) fn params(sig: &mut Signature) -> syn::Result<Vec<Param>> {
    let mut errors = Errors::default();
    let mut params = Vec::new();
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(receiver) => errors.push(Err(syn::Error::new_spanned(
                receiver,
                "a tool takes named arguments, not `self`: put #[tool] on a free function",
            ))),
            FnArg::Typed(typed) => match param(typed) {
                Ok(param) => params.push(param),
                Err(error) => errors.push(Err(error)),
            },
        }
    }
    errors.finish()?;
    Ok(params)
}

fn param(typed: &mut syn::PatType) -> syn::Result<Param> {
    let ident = match &*typed.pat {
        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "a tool parameter is a plain name, such as `text: String`: \
                 it names the property of the input schema",
            ));
        }
    };
    check_type(&typed.ty)?;
    let (attrs, kept) = std::mem::take(&mut typed.attrs)
        .into_iter()
        .partition(|attr| attr.path().is_ident("serde") || attr.path().is_ident("schemars"));
    typed.attrs = kept;
    Ok(Param {
        name: ident.unraw().to_string(),
        ident,
        ty: (*typed.ty).clone(),
        attrs,
    })
}

/// Arguments are deserialized into owned values: borrowed and opaque types are
/// reported here, at the type, rather than as lifetime errors in generated code.
fn check_type(ty: &Type) -> syn::Result<()> {
    match ty {
        Type::Reference(reference) => Err(syn::Error::new_spanned(
            reference,
            "a tool parameter owns its value: use an owned type, such as `String` for `&str`",
        )),
        Type::ImplTrait(opaque) => Err(syn::Error::new_spanned(
            opaque,
            "a tool parameter needs a concrete type: `impl Trait` has no input schema",
        )),
        Type::Infer(infer) => Err(syn::Error::new(
            infer.span(),
            "a tool parameter needs a type",
        )),
        Type::Array(array) => check_type(&array.elem),
        Type::Slice(slice) => check_type(&slice.elem),
        Type::Group(group) => check_type(&group.elem),
        Type::Paren(paren) => check_type(&paren.elem),
        Type::Tuple(tuple) => tuple.elems.iter().try_for_each(check_type),
        Type::Path(path) => {
            path.path
                .segments
                .iter()
                .try_for_each(|segment| match &segment.arguments {
                    PathArguments::AngleBracketed(args) => {
                        args.args.iter().try_for_each(|arg| match arg {
                            GenericArgument::Type(ty) => check_type(ty),
                            _ => Ok(()),
                        })
                    }
                    _ => Ok(()),
                })
        }
        _ => Ok(()),
    }
}

/// Recognizes `Result<T, E>` by its last path segment: the macro sees tokens,
/// not types, so a `Result` alias with one parameter is converted as a whole.
pub(crate) fn output(sig: &Signature) -> Output<'_> {
    let ReturnType::Type(_, ty) = &sig.output else {
        return Output::Plain(None);
    };
    if let Type::Path(path) = &**ty
        && path.qself.is_none()
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
        && let PathArguments::AngleBracketed(args) = &last.arguments
        && let [GenericArgument::Type(ok), GenericArgument::Type(err)] =
            args.args.iter().collect::<Vec<_>>().as_slice()
    {
        return Output::Result { ok, err };
    }
    Output::Plain(Some(ty))
}

#[cfg(test)]
mod tests {
    use super::{Output, check, output, params};
    use syn::{Signature, parse_quote};

    fn param_error(mut sig: Signature) -> String {
        match params(&mut sig) {
            Ok(_) => panic!("expected an error"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn params_become_properties() {
        let mut sig: Signature = parse_quote! {
            fn f(mut text: String, #[serde(default)] r#type: Vec<u8>, #[allow(unused)] n: u32)
        };
        let Ok(params) = params(&mut sig) else {
            panic!("valid parameters")
        };
        let names: Vec<_> = params.iter().map(|param| param.name.as_str()).collect();
        assert_eq!(names, ["text", "type", "n"]);
        assert_eq!(params[1].attrs.len(), 1);
        assert!(params[2].attrs.is_empty());
        // The serde attribute left the function; the lint attribute stayed.
        let expected: Signature = parse_quote! {
            fn f(mut text: String, r#type: Vec<u8>, #[allow(unused)] n: u32)
        };
        assert_eq!(sig, expected);
    }

    #[test]
    fn bad_params() {
        assert!(param_error(parse_quote!(fn f(&self))).contains("not `self`"));
        assert!(param_error(parse_quote!(fn f((a, b): (u8, u8)))).contains("plain name"));
        assert!(param_error(parse_quote!(fn f(ref a: u8))).contains("plain name"));
        assert!(param_error(parse_quote!(fn f(a: &str))).contains("owned type"));
        assert!(param_error(parse_quote!(fn f(a: Vec<&str>))).contains("owned type"));
        assert!(param_error(parse_quote!(fn f(a: impl Into<String>))).contains("impl Trait"));
    }

    #[test]
    fn bad_signatures() {
        let error = |sig: Signature| check(&sig).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error(parse_quote!(async fn f())).contains("async fn"));
        assert!(error(parse_quote!(unsafe fn f())).contains("unsafe"));
        assert!(error(parse_quote!(fn f<T>(t: T))).contains("generic"));
        assert!(check(&parse_quote!(const fn f(a: u8) -> u8)).is_ok());
    }

    #[test]
    fn result_is_recognized_by_name() {
        assert!(matches!(output(&parse_quote!(fn f())), Output::Plain(None)));
        assert!(matches!(
            output(&parse_quote!(fn f() -> usize)),
            Output::Plain(Some(_))
        ));
        assert!(matches!(
            output(&parse_quote!(fn f() -> std::result::Result<String, ToolError>)),
            Output::Result { .. }
        ));
        assert!(matches!(
            output(&parse_quote!(fn f() -> io::Result<String>)),
            Output::Plain(Some(_))
        ));
    }
}
