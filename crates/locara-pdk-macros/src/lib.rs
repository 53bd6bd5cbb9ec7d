//! The `#[tool]` attribute of `locara-pdk` (use it as `locara_pdk::tool`).
//!
//! It reads one function's signature and doc comment and generates the program's `main` (the
//! tool ABI) and a `__locara_tool_info()` giving the tool's id, version, description and
//! schemas. It checks only what it can see in the syntax (no generics, no `self`, no `async`,
//! a `Result` return, a doc comment, simple owned parameters), and that the id follows
//! `locara-manifest`'s naming rule, the one the registry applies; it reports each with a
//! message that says what to write instead. Whether the types can be (de)serialized and described by
//! a schema is left to the trait bounds of `locara_pdk::__private`, whose diagnostics say so.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{
    Expr, ExprLit, FnArg, GenericArgument, ItemFn, Lit, LitStr, Meta, Pat, PathArguments,
    ReturnType, Token, Type,
};

/// Makes a function a Locara tool: see the `locara-pdk` crate documentation.
///
/// `#[tool]` or `#[tool(id = "text.shout")]` on `fn name(args: Args) -> Result<T, ToolError>`
/// (one parameter of a struct type is the whole input) or on
/// `fn name(text: String, times: u32) -> Result<T, ToolError>` (each parameter is one field
/// of the input object).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = syn::parse_macro_input!(attr as Attr);
    let func = syn::parse_macro_input!(item as ItemFn);
    expand(&attr, &func)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// `id = "..."`, optional.
struct Attr {
    id: Option<LitStr>,
}

impl Parse for Attr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Attr> {
        let mut id = None;
        while !input.is_empty() {
            let key: syn::Ident = input.parse()?;
            if key != "id" {
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown #[tool] option `{key}`; the only option is `id = \"...\"`"),
                ));
            }
            input.parse::<Token![=]>()?;
            let value: LitStr = input.parse()?;
            if let Err(error) = locara_manifest::ToolName::new(value.value()) {
                return Err(syn::Error::new(value.span(), error.to_string()));
            }
            id = Some(value);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(Attr { id })
    }
}

fn expand(attr: &Attr, func: &ItemFn) -> syn::Result<TokenStream2> {
    let sig = &func.sig;
    let name = &sig.ident;
    if let Some(asyncness) = sig.asyncness {
        return Err(syn::Error::new(
            asyncness.span(),
            "a #[tool] function cannot be `async`: a tool is one synchronous call per process; write a plain `fn`",
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a #[tool] function cannot be generic: its input and output schemas are fixed when it is compiled; use concrete types",
        ));
    }
    let output = ok_type(&sig.output, sig.ident.span())?;
    let description = description(func)?;

    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                return Err(syn::Error::new(
                    receiver.span(),
                    "a #[tool] function cannot take `self`: write a free function",
                ));
            }
            FnArg::Typed(typed) => {
                let Pat::Ident(ident) = &*typed.pat else {
                    return Err(syn::Error::new(
                        typed.pat.span(),
                        "a #[tool] parameter must be a plain name (`text: String`), not a pattern: it becomes a field of the input",
                    ));
                };
                if let Type::Reference(reference) = &*typed.ty {
                    return Err(syn::Error::new(
                        reference.span(),
                        "a #[tool] parameter must be an owned type (`String`, not `&str`): the arguments are deserialized into it",
                    ));
                }
                params.push((ident.ident.clone(), (*typed.ty).clone()));
            }
        }
    }

    let id = match &attr.id {
        Some(id) => quote!(#id),
        None => {
            // The package name is the id: check it now rather than when the tool is published.
            if let Ok(package) = std::env::var("CARGO_PKG_NAME")
                && let Err(error) = locara_manifest::ToolName::new(package)
            {
                return Err(syn::Error::new(
                    sig.ident.span(),
                    format!(
                        "the package name is this tool's id, and {error}; name the tool with `#[tool(id = \"...\")]`"
                    ),
                ));
            }
            quote!(::core::env!("CARGO_PKG_NAME"))
        }
    };
    let vis = &func.vis;
    // One parameter of a named non-std type is the whole input; anything else (no
    // parameters, several, or one of a std type like `String`) is one field per parameter.
    let (input_type, input_item, call) = match params.as_slice() {
        [(arg, ty)] if is_input_struct(ty) => (quote!(#ty), quote!(), quote!(#name(#arg))),
        _ => {
            let struct_name = format_ident!("__LocaraToolInput_{}", name);
            let fields = params.iter().map(|(ident, ty)| quote!(#ident: #ty));
            let args = params.iter().map(|(ident, _)| quote!(input.#ident));
            let item = quote! {
                #[doc(hidden)]
                #[allow(non_camel_case_types)]
                #[derive(
                    ::locara_pdk::__private::serde::Deserialize,
                    ::locara_pdk::__private::schemars::JsonSchema
                )]
                #[serde(crate = "::locara_pdk::__private::serde", deny_unknown_fields)]
                #[schemars(crate = "::locara_pdk::__private::schemars")]
                struct #struct_name {
                    #(#fields,)*
                }
            };
            (quote!(#struct_name), item, quote!(#name(#(#args),*)))
        }
    };
    // The input and result types are named once, in this impl (see `__private::Io`), each
    // with the span of where the function names it, so a missing derive is reported there.
    let io = format_ident!("__LocaraToolIo_{}", name);
    let input_span = match params.as_slice() {
        [(_, ty)] if is_input_struct(ty) => ty.span(),
        _ => sig.span(),
    };
    let io_input = quote_spanned! {input_span=> type Input = #input_type; };
    let io_output = quote_spanned! {output.span()=> type Output = #output; };
    let io_item = quote! {
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        struct #io;
        impl ::locara_pdk::__private::Io for #io {
            #io_input
            #io_output
        }
    };
    let input_binding = if matches!(params.as_slice(), [(_, ty)] if is_input_struct(ty)) {
        let arg = &params[0].0;
        quote!(#arg)
    } else {
        quote!(input)
    };

    Ok(quote! {
        #func

        #input_item

        #io_item

        /// The tool's id, version, description and schemas (what `--locara-describe` prints).
        #[doc(hidden)]
        #[allow(dead_code)]
        #vis fn __locara_tool_info() -> ::locara_pdk::ToolInfo {
            ::locara_pdk::__private::info::<#io>(
                #id,
                ::core::env!("CARGO_PKG_VERSION"),
                #description,
            )
        }

        /// Runs the tool on a JSON input, as the program does on its stdin.
        #[doc(hidden)]
        #[allow(dead_code)]
        #vis fn __locara_tool_call(
            input: ::locara_pdk::__private::serde_json::Value,
        ) -> ::core::result::Result<::locara_pdk::__private::serde_json::Value, ::locara_pdk::ToolError> {
            ::locara_pdk::__private::call::<#io>(|#input_binding: #input_type| #call, input)
        }

        /// Runs the tool on its arguments' JSON text, giving its result's, as `main` does.
        #[doc(hidden)]
        #[allow(dead_code)]
        #vis fn __locara_tool_run(
            input: &[u8],
        ) -> ::core::result::Result<::std::vec::Vec<u8>, ::locara_pdk::ToolError> {
            ::locara_pdk::__private::call_json::<#io>(|#input_binding: #input_type| #call, input)
        }

        /// The tool ABI's entry point, generated by `#[locara_pdk::tool]`.
        #[allow(dead_code)]
        #vis fn main() -> ::std::process::ExitCode {
            ::locara_pdk::__private::main(__locara_tool_info, __locara_tool_run)
        }
    })
}

/// `T` of a `Result<T, ToolError>` return type.
fn ok_type(output: &ReturnType, name_span: Span) -> syn::Result<Type> {
    const EXPECTED: &str = "a #[tool] function must return `Result<T, ToolError>`, where `T` is the tool's result (`Serialize + JsonSchema`)";
    let ReturnType::Type(_, ty) = output else {
        return Err(syn::Error::new(name_span, EXPECTED));
    };
    let Type::Path(path) = &**ty else {
        return Err(syn::Error::new(ty.span(), EXPECTED));
    };
    let last = path.path.segments.last().expect("a path has a segment");
    if last.ident != "Result" {
        return Err(syn::Error::new(ty.span(), EXPECTED));
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return Err(syn::Error::new(ty.span(), EXPECTED));
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    match types.as_slice() {
        [ok, err] if is_tool_error(err) => Ok((*ok).clone()),
        [_, err] => Err(syn::Error::new(
            err.span(),
            "the error type of a #[tool] function must be `ToolError` (`locara_pdk::ToolError`): its kind decides the exit code the host reads",
        )),
        _ => Err(syn::Error::new(ty.span(), EXPECTED)),
    }
}

fn is_tool_error(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "ToolError"))
}

/// Whether a lone parameter's type is a struct holding the whole input, rather than one field:
/// a path type whose last segment is not a std type a field would have.
fn is_input_struct(ty: &Type) -> bool {
    const FIELD_TYPES: &[&str] = &[
        "String", "Vec", "Option", "Box", "HashMap", "BTreeMap", "HashSet", "BTreeSet", "Value",
        "PathBuf", "bool", "char", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8",
        "u16", "u32", "u64", "u128", "usize",
    ];
    match ty {
        Type::Path(p) if p.qself.is_none() => p
            .path
            .segments
            .last()
            .is_some_and(|s| !FIELD_TYPES.iter().any(|t| s.ident == t)),
        _ => false,
    }
}

/// The doc comment, its lines trimmed and paragraphs kept; an error if there is none.
fn description(func: &ItemFn) -> syn::Result<String> {
    let mut lines = Vec::new();
    for attr in &func.attrs {
        if let Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let Expr::Lit(ExprLit {
                lit: Lit::Str(s), ..
            }) = &nv.value
        {
            lines.push(s.value().trim().to_owned());
        }
    }
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = Vec::new();
    for line in lines {
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(current.join(" "));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        paragraphs.push(current.join(" "));
    }
    if paragraphs.is_empty() {
        return Err(syn::Error::new(
            func.sig.ident.span(),
            "a #[tool] function needs a doc comment: it becomes the tool's description, which is what a model reads to decide when to call it",
        ));
    }
    Ok(paragraphs.join("\n\n"))
}
