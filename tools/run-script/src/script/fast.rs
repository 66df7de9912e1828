//! Linear-time replacements for the Boa 0.22 string searches that are quadratic on long
//! strings (a script's point is aggregating whole files, so they are what it spends its time
//! in). Same semantics as the builtins they replace; whatever case they do not handle goes to
//! the builtin.
//!
//! - `String.prototype.indexOf(s, from)`: Boa's search starts with `skip(from)` over every
//!   window of the string, so a loop over the matches of a 4 MiB string is quadratic. Here
//!   `memchr::memmem` (Latin-1) or a scan for the first code unit (UTF-16).
//! - `String.prototype.split(s)` and `replaceAll(s, r)` with a string: loops of that search.
//! - `String.prototype.repeat(n)`: Boa lists `n` references to the string before joining
//!   them, 12 bytes each, so `'x'.repeat(1e8)` asked for 1.5 GiB. Here whole chunks of 64 KiB
//!   are joined: the result and a chunk.
//! - `JSON.parse(text)`: Boa checks the text with serde_json and then parses it as a script,
//!   whose strings go to the context's interner and stay there: every page a script parsed
//!   (each observation `tools.call` returns, too) was kept until the script ended, so paging
//!   1 GiB asked for more than 1 GiB. Here serde_json's value becomes the object directly.
//! - `RegExp.prototype.exec`, which `match`, `matchAll`, `replace`, `split`, `search` and
//!   `test` all go through: Boa copies a Latin-1 subject to UTF-16 on every call, so
//!   `text.match(/ERROR/g)` over a 4 MiB page copied 8 MiB per match. Here a long Latin-1
//!   subject is copied once and kept while it is matched again.

use std::cell::RefCell;

use boa_engine::object::FunctionObjectBuilder;
use boa_engine::object::builtins::JsArray;
use boa_engine::property::PropertyDescriptor;
use boa_engine::string::{JsStr, JsStrVariant};
use boa_engine::{
    Context, JsArgs, JsObject, JsResult, JsString, JsSymbol, JsValue, NativeFunction, js_string,
};

/// Subjects shorter than this (in code units) go to the builtin `exec` as they are: copying
/// them costs less than keeping them.
const COPY_FROM: usize = 1024;

/// The builtins replaced, for the cases left to them, and the one UTF-16 copy kept.
struct Builtins {
    index_of: JsObject,
    split: JsObject,
    replace_all: JsObject,
    repeat: JsObject,
    parse: JsObject,
    exec: JsObject,
    /// The last long Latin-1 subject of `exec` and its UTF-16 copy.
    copy: RefCell<Option<(JsString, JsString)>>,
}

/// Replaces the builtins in `context`'s realm.
pub(super) fn install(context: &mut Context) -> JsResult<()> {
    let string_prototype = context.intrinsics().constructors().string().prototype();
    let json = context.intrinsics().objects().json();
    let regexp_prototype = context.intrinsics().constructors().regexp().prototype();
    let get = |object: &JsObject, name: JsString, context: &mut Context| -> JsResult<JsObject> {
        object.get(name, context)?.as_object().ok_or_else(|| {
            boa_engine::JsNativeError::typ()
                .with_message("a builtin is missing")
                .into()
        })
    };
    let builtins = Builtins {
        index_of: get(&string_prototype, js_string!("indexOf"), context)?,
        split: get(&string_prototype, js_string!("split"), context)?,
        replace_all: get(&string_prototype, js_string!("replaceAll"), context)?,
        repeat: get(&string_prototype, js_string!("repeat"), context)?,
        parse: get(&json, js_string!("parse"), context)?,
        exec: get(&regexp_prototype, js_string!("exec"), context)?,
        copy: RefCell::new(None),
    };
    context.insert_data(std::rc::Rc::new(builtins));
    let replace = |object: &JsObject,
                   name: JsString,
                   length: usize,
                   function: boa_engine::native_function::NativeFunctionPointer,
                   context: &mut Context|
     -> JsResult<()> {
        let function =
            FunctionObjectBuilder::new(context.realm(), NativeFunction::from_fn_ptr(function))
                .name(name.clone())
                .length(length)
                .build();
        object.define_property_or_throw(
            name,
            PropertyDescriptor::builder()
                .value(function)
                .writable(true)
                .enumerable(false)
                .configurable(true),
            context,
        )?;
        Ok(())
    };
    replace(
        &string_prototype,
        js_string!("indexOf"),
        1,
        index_of,
        context,
    )?;
    replace(&string_prototype, js_string!("split"), 2, split, context)?;
    replace(
        &string_prototype,
        js_string!("replaceAll"),
        2,
        replace_all,
        context,
    )?;
    replace(&string_prototype, js_string!("repeat"), 1, repeat, context)?;
    replace(&json, js_string!("parse"), 2, parse, context)?;
    replace(&regexp_prototype, js_string!("exec"), 1, exec, context)?;
    Ok(())
}

/// The builtins [`install`] kept.
fn builtins(context: &Context) -> JsResult<std::rc::Rc<Builtins>> {
    context
        .get_data::<std::rc::Rc<Builtins>>()
        .cloned()
        .ok_or_else(|| {
            boa_engine::JsNativeError::typ()
                .with_message("no builtins kept")
                .into()
        })
}

/// The first index at or after `from` where `needle` is in `haystack` (`StringIndexOf`).
pub(super) fn find(haystack: JsStr<'_>, needle: JsStr<'_>, from: usize) -> Option<usize> {
    let (len, n) = (haystack.len(), needle.len());
    if n == 0 {
        return (from <= len).then_some(from);
    }
    if from > len || n > len - from {
        return None;
    }
    let found = match (haystack.variant(), needle.variant()) {
        (JsStrVariant::Latin1(h), JsStrVariant::Latin1(n)) => memchr::memmem::find(&h[from..], n),
        (JsStrVariant::Latin1(h), JsStrVariant::Utf16(n)) => {
            // A code unit past Latin-1 is in no Latin-1 string.
            let n: Option<Vec<u8>> = n.iter().map(|&u| u8::try_from(u).ok()).collect();
            memchr::memmem::find(&h[from..], &n?)
        }
        (JsStrVariant::Utf16(h), JsStrVariant::Latin1(n)) => {
            let n: Vec<u16> = n.iter().map(|&b| u16::from(b)).collect();
            find_units(&h[from..], &n)
        }
        (JsStrVariant::Utf16(h), JsStrVariant::Utf16(n)) => find_units(&h[from..], n),
    };
    found.map(|i| i + from)
}

/// The first index of `needle` (not empty) in `haystack`.
fn find_units(haystack: &[u16], needle: &[u16]) -> Option<usize> {
    let last_start = haystack.len().checked_sub(needle.len())?;
    let first = needle[0];
    let mut at = 0;
    while at <= last_start {
        at += haystack[at..=last_start].iter().position(|&u| u == first)?;
        if haystack[at..at + needle.len()] == *needle {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// `String.prototype.indexOf(searchString, position)`.
fn index_of(this: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let (Some(string), Some(search)) = (this.as_string(), args.get_or_undefined(0).as_string())
    else {
        let builtin = builtins(context)?.index_of.clone();
        return builtin.call(this, args, context);
    };
    let position = args.get_or_undefined(1).to_integer_or_infinity(context)?;
    let start: usize = position.clamp_finite(0, string.len());
    Ok(find(string.as_str(), search.as_str(), start)
        .map_or(-1.0, |i| i as f64)
        .into())
}

/// Whether `String.prototype` (or `Object.prototype`) has a `symbol` method, which a
/// primitive separator or search value would then use.
fn has_method(symbol: JsSymbol, context: &mut Context) -> JsResult<bool> {
    let prototype = context.intrinsics().constructors().string().prototype();
    Ok(!prototype.get(symbol, context)?.is_null_or_undefined())
}

/// `String.prototype.split(separator, limit)` for a string and a string separator.
fn split(this: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let limit = args.get_or_undefined(1);
    let (Some(string), Some(separator)) = (this.as_string(), args.get_or_undefined(0).as_string())
    else {
        let builtin = builtins(context)?.split.clone();
        return builtin.call(this, args, context);
    };
    if separator.is_empty() || has_method(JsSymbol::split(), context)? {
        let builtin = builtins(context)?.split.clone();
        return builtin.call(this, args, context);
    }
    let limit = if limit.is_undefined() {
        u32::MAX
    } else {
        limit.to_u32(context)?
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut parts = Vec::new();
    if limit == 0 {
        return Ok(JsArray::from_iter(parts, context).into());
    }
    let mut start = 0;
    while let Some(at) = find(string.as_str(), separator.as_str(), start) {
        parts.push(JsValue::from(string.slice(start, at)));
        if parts.len() == limit {
            return Ok(JsArray::from_iter(parts, context).into());
        }
        start = at + separator.len();
    }
    parts.push(JsValue::from(string.slice(start, string.len())));
    Ok(JsArray::from_iter(parts, context).into())
}

/// `String.prototype.replaceAll(searchValue, replaceValue)` for strings, with a replacement
/// that has no `$` patterns.
fn replace_all(this: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let (Some(string), Some(search), Some(replacement)) = (
        this.as_string(),
        args.get_or_undefined(0).as_string(),
        args.get_or_undefined(1).as_string(),
    ) else {
        let builtin = builtins(context)?.replace_all.clone();
        return builtin.call(this, args, context);
    };
    if search.is_empty()
        || replacement.iter().any(|u| u == u16::from(b'$'))
        || has_method(JsSymbol::replace(), context)?
    {
        let builtin = builtins(context)?.replace_all.clone();
        return builtin.call(this, args, context);
    }
    let mut pieces: Vec<JsString> = Vec::new();
    let mut start = 0;
    while let Some(at) = find(string.as_str(), search.as_str(), start) {
        pieces.push(string.slice(start, at));
        pieces.push(replacement.clone());
        start = at + search.len();
    }
    pieces.push(string.slice(start, string.len()));
    let strs: Vec<JsStr<'_>> = pieces.iter().map(JsString::as_str).collect();
    Ok(JsString::concat_array(&strs).into())
}

/// The code units of a chunk [`repeat`] joins (64 Ki).
const CHUNK: usize = 1 << 16;

/// `String.prototype.repeat(count)` for a string and a count that is a number (whose
/// conversion cannot run script code), when the result is longer than a chunk; the builtin
/// does the rest (and throws its errors).
fn repeat(this: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let count = args.get_or_undefined(0);
    let fast = match (this.as_string(), count.as_number()) {
        (Some(string), Some(count)) if count.is_finite() && count >= 1.0 && !string.is_empty() => {
            let count = count.trunc();
            // A result past Boa's longest string goes to the builtin, which throws.
            let total = count * string.len() as f64;
            (total > CHUNK as f64 && total <= f64::from(u32::MAX))
                .then_some((string, count as usize))
        }
        _ => None,
    };
    let Some((string, count)) = fast else {
        let builtin = builtins(context)?.repeat.clone();
        return builtin.call(this, args, context);
    };
    let per_chunk = (CHUNK / string.len()).clamp(1, count);
    let chunk = JsString::concat_array(&vec![string.as_str(); per_chunk]);
    let mut pieces = vec![chunk.as_str(); count / per_chunk];
    pieces.extend(std::iter::repeat_n(string.as_str(), count % per_chunk));
    Ok(JsString::concat_array(&pieces).into())
}

/// The value of the JSON text `text`, without the interner (see the module's note); a text
/// that is not JSON is a `SyntaxError` with serde_json's message, as from `JSON.parse`.
pub(super) fn json_value(text: &str, context: &mut Context) -> JsResult<JsValue> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        boa_engine::JsNativeError::syntax().with_message(format!("JSON.parse: {e}"))
    })?;
    JsValue::from_json(&value, context)
}

/// `JSON.parse(text, reviver)`: without a reviver, [`json_value`] of the text as a string;
/// with one (or a text with lone surrogates), the builtin.
fn parse(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    if args.get_or_undefined(1).is_callable() {
        let builtin = builtins(context)?.parse.clone();
        return builtin.call(&JsValue::undefined(), args, context);
    }
    let text = args.get_or_undefined(0).to_string(context)?;
    match text.to_std_string() {
        Ok(text) => json_value(&text, context),
        // Lone surrogates, which UTF-8 cannot hold: the builtin, given the string made.
        Err(_) => {
            let builtin = builtins(context)?.parse.clone();
            builtin.call(&JsValue::undefined(), &[text.into()], context)
        }
    }
}

/// `RegExp.prototype.exec(string)`, with a long Latin-1 subject given to the builtin as its
/// UTF-16 copy (the same string, which Boa matches without copying it again).
fn exec(this: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let builtins = builtins(context)?;
    let subject = args.get_or_undefined(0);
    let subject = match subject.as_string() {
        Some(s) if s.len() >= COPY_FROM && s.as_str().is_latin1() => {
            JsValue::from(utf16_copy(&builtins, &s))
        }
        _ => subject.clone(),
    };
    builtins.exec.call(this, &[subject], context)
}

/// The UTF-16 copy of `string` (Latin-1), made once while `string` is the one matched.
fn utf16_copy(builtins: &Builtins, string: &JsString) -> JsString {
    let mut copy = builtins.copy.borrow_mut();
    if let Some((original, utf16)) = copy.as_ref()
        && same_data(original, string)
    {
        return utf16.clone();
    }
    let units: Vec<u16> = string.iter().collect();
    let utf16 = JsString::from(units.as_slice());
    *copy = Some((string.clone(), utf16.clone()));
    utf16
}

/// Whether `a` and `b` are the same code units in memory (not only equal ones).
fn same_data(a: &JsString, b: &JsString) -> bool {
    match (a.as_str().variant(), b.as_str().variant()) {
        (JsStrVariant::Latin1(a), JsStrVariant::Latin1(b)) => std::ptr::eq(a, b),
        (JsStrVariant::Utf16(a), JsStrVariant::Utf16(b)) => std::ptr::eq(a, b),
        _ => false,
    }
}
