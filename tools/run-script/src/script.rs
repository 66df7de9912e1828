//! A script run in Boa: the `tools` and `console` globals, the result as JSON, and the error a
//! script comes to. No bindings here: the tool calls go through the function [`run`] is given,
//! so this runs (and is tested) natively as well as in the component.

use std::cell::RefCell;
use std::rc::Rc;

use boa_engine::ast::operations::{ContainsSymbol, contains};
use boa_engine::ast::scope::Scope;
use boa_engine::object::ObjectInitializer;
use boa_engine::parser::Parser;
use boa_engine::property::Attribute;
use boa_engine::{
    Context, JsArgs, JsError, JsNativeError, JsObject, JsResult, JsString, JsValue, NativeFunction,
    Script, Source, builtins::promise::PromiseState, js_string,
};

mod fast;
mod result;

/// The most bytes of `console.log` output kept: the output is cut there (within a line too),
/// [`LOG_CUT`] is the last line, and further output is dropped.
pub const MAX_LOG_BYTES: usize = 1 << 20;

/// The most bytes of the result's JSON returned whole (8 MiB, well under the 16 MiB the host
/// lifts from a tool); a longer result is cut there ([`Output::result_bytes`] says how long
/// it was).
pub const MAX_RESULT_BYTES: usize = 8 << 20;

/// The line that ends a log cut at [`MAX_LOG_BYTES`].
pub const LOG_CUT: &str = "[log cut: output past 1 MiB was dropped]";

/// What a script came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// What it returned, as JSON text (`undefined` is `null`): its first
    /// [`MAX_RESULT_BYTES`] when it is longer (cut at a character, no longer JSON).
    pub result: String,
    /// The bytes of the whole JSON text of what it returned.
    pub result_bytes: u64,
    /// What it printed, a line (ending in `\n`) per `console.log` call.
    pub log: String,
    /// How many `tools.call` calls it made.
    pub calls: u32,
    /// The bytes of the observations those calls returned.
    pub inner_bytes: u64,
}

/// Why a script failed (the cases of `script-error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptError {
    /// The script is empty or blank.
    InvalidArgument(String),
    /// It does not parse: the parser's message, with the line and column.
    Syntax(String),
    /// It threw an exception it did not catch: its message and where.
    Uncaught(String),
    /// What it returned cannot be written as JSON.
    InvalidResult(String),
}

/// Calls a tool: (name, arguments as JSON text) → the observation's JSON text.
pub type CallTool = Box<dyn FnMut(&str, &str) -> String>;

/// The text before the script: on its first line, so that the script's line numbers are the
/// user's (its first line's columns are shifted by this length, which [`user_position`]
/// takes back).
const PREFIX: &str = "(function () {";
/// [`PREFIX`] of a script that awaits.
const ASYNC_PREFIX: &str = "(async function () {";
/// The text after the script (the newline ends a `//` comment on its last line).
const SUFFIX: &str = "\n})()";
/// The name positions in backtraces carry.
const SOURCE_NAME: &str = "script";

/// The observation bytes a script takes in between two collections forced before its next
/// tool call. Boa collects when its own objects pass a threshold, and counts neither the
/// strings they hold nor an array's items, so a loop that splits page after page into lines
/// would otherwise keep many pages of garbage.
const COLLECT_EVERY: u64 = 16 << 20;

/// What the native functions share: the host's calls, the counts and the log.
struct State {
    call: CallTool,
    calls: u32,
    inner_bytes: u64,
    /// Observation bytes taken in since the last forced collection ([`COLLECT_EVERY`]).
    uncollected: u64,
    log: String,
    log_full: bool,
    /// The intrinsic `JSON.stringify`, taken before the script runs (which may replace the
    /// global).
    stringify: JsObject,
}

type Shared = Rc<RefCell<State>>;

/// Runs `script` (the body of a function, an async one when it awaits) with `call` answering
/// its `tools.call`.
///
/// # Errors
/// What the script came to when it did not return a value JSON can write ([`ScriptError`]).
pub fn run(script: &str, call: CallTool) -> Result<Output, ScriptError> {
    if script.trim().is_empty() {
        return Err(ScriptError::InvalidArgument(
            "the script is empty: write the body of a function that returns the answer, such as `return 1 + 1`".into(),
        ));
    }
    let mut context = Context::default();
    // The body alone first, as an async function's: the parser's positions are then the
    // user's own.
    let body = Parser::new(Source::from_bytes(script))
        .parse_function_body(context.interner_mut(), false, true)
        .map_err(|e| ScriptError::Syntax(syntax_message(&e, script)))?;
    // A body that awaits runs as an async function's; any other as a plain function's, whose
    // exceptions keep where they were thrown (a rejected promise keeps only an `Error`'s
    // `stack`). `for await` shows as a body that only parses with `await` allowed.
    let awaits = contains(&body, ContainsSymbol::AwaitExpression)
        || Parser::new(Source::from_bytes(script))
            .parse_function_body(context.interner_mut(), false, false)
            .is_err();
    let prefix = if awaits { ASYNC_PREFIX } else { PREFIX };

    let wrapped = format!("{prefix}{script}{SUFFIX}");
    // The body's parse stops at a `}` that closes no `{` (the rest would run outside the
    // function): the whole program must be the one call of the function.
    let whole = Parser::new(Source::from_bytes(&wrapped))
        .parse_script(&Scope::new_global(), context.interner_mut())
        .map_err(|e| ScriptError::Syntax(user_positions(&e.to_string(), prefix)))?;
    if whole.statements().statements().len() != 1 {
        return Err(ScriptError::Syntax(
            "unexpected token '}': it closes no '{' (the script is the body of a function)".into(),
        ));
    }

    let shared = install(&mut context, call).map_err(|e| uncaught(&e, prefix, &mut context))?;
    let source = Source::from_bytes(&wrapped).with_path(std::path::Path::new(SOURCE_NAME));
    let program = Script::parse(source, None, &mut context)
        .map_err(|e| ScriptError::Syntax(user_positions(&e.to_string(), prefix)))?;
    let value = program
        .evaluate(&mut context)
        .map_err(|e| uncaught(&e, prefix, &mut context))?;
    context
        .run_jobs()
        .map_err(|e| uncaught(&e, prefix, &mut context))?;
    // What an async body (or a plain one returning a promise) came to.
    let returned = match value.as_promise().map(|p| p.state()) {
        None => value,
        Some(PromiseState::Fulfilled(v)) => v,
        Some(PromiseState::Rejected(reason)) => {
            return Err(uncaught(
                &JsError::from_opaque(reason),
                prefix,
                &mut context,
            ));
        }
        Some(PromiseState::Pending) => {
            return Err(ScriptError::Uncaught(
                "the script awaited a promise that never settled (there are no timers or events here: tools.call returns its result directly)".into(),
            ));
        }
    };
    let result = match returned.as_string() {
        // A string is quoted without the whole copy JSON.stringify would make.
        Some(string) => result::quoted(string.as_str(), MAX_RESULT_BYTES),
        None => result::cut(json_text(&shared, returned, prefix, &mut context)?),
    };
    let state = shared.borrow();
    Ok(Output {
        result: result.text,
        result_bytes: result.bytes,
        log: state.log.clone(),
        calls: state.calls,
        inner_bytes: state.inner_bytes,
    })
}

/// `returned` as the script's own `JSON.stringify` (the original, whatever the script did to
/// `JSON`) writes it; `null` for what it leaves undefined (`undefined`, a function).
fn json_text(
    shared: &Shared,
    returned: JsValue,
    prefix: &str,
    context: &mut Context,
) -> Result<String, ScriptError> {
    let stringify = shared.borrow().stringify.clone();
    match stringify.call(&JsValue::undefined(), &[returned], context) {
        Ok(v) => Ok(match v.as_string() {
            Some(s) => s.to_std_string_escaped(),
            None => "null".to_string(),
        }),
        Err(e) => Err(ScriptError::InvalidResult(format!(
            "what the script returned cannot be written as JSON: {}",
            error_text(&e, prefix, context)
        ))),
    }
}

/// Adds the `tools` and `console` globals, and returns the state their functions share.
fn install(context: &mut Context, call: CallTool) -> JsResult<Shared> {
    let json = context
        .global_object()
        .get(js_string!("JSON"), context)?
        .as_object()
        .ok_or_else(|| JsNativeError::typ().with_message("no JSON object"))?;
    let function = |name: JsString, context: &mut Context| -> JsResult<JsObject> {
        json.get(name, context)?
            .as_object()
            .ok_or_else(|| JsNativeError::typ().with_message("no JSON function").into())
    };
    let stringify = function(js_string!("stringify"), context)?;
    let shared = Rc::new(RefCell::new(State {
        call,
        calls: 0,
        inner_bytes: 0,
        uncollected: 0,
        log: String::new(),
        log_full: false,
        stringify,
    }));
    context.insert_data(shared.clone());

    let tools = ObjectInitializer::new(context)
        .function(
            NativeFunction::from_fn_ptr(tools_call),
            js_string!("call"),
            2,
        )
        .build();
    let console = ObjectInitializer::new(context)
        .function(
            NativeFunction::from_fn_ptr(console_log),
            js_string!("log"),
            0,
        )
        .build();
    fast::install(context)?;
    let attribute = Attribute::WRITABLE | Attribute::CONFIGURABLE;
    context.register_global_property(js_string!("tools"), tools, attribute)?;
    context.register_global_property(js_string!("console"), console, attribute)?;
    Ok(shared)
}

/// The state [`install`] left in `context`.
fn shared(context: &Context) -> JsResult<Shared> {
    context
        .get_data::<Shared>()
        .cloned()
        .ok_or_else(|| JsNativeError::typ().with_message("no script state").into())
}

/// `tools.call(name, args)`: the observation of tool `name` called with `args` (an object,
/// default `{}`), as an object.
fn tools_call(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let shared = shared(context)?;
    let name = args.get_or_undefined(0);
    let Some(name) = name.as_string() else {
        return Err(JsNativeError::typ()
            .with_message(format!(
                "tools.call: the tool name must be a string, such as \"read_file\" (got {})",
                name.type_of()
            ))
            .into());
    };
    let name = name.to_std_string_escaped();
    let arguments = args.get_or_undefined(1);
    let arguments = if arguments.is_null_or_undefined() {
        "{}".to_string()
    } else if arguments.is_object() && !arguments.is_callable() && !is_array(arguments) {
        let stringify = shared.borrow().stringify.clone();
        let text = stringify.call(
            &JsValue::undefined(),
            std::slice::from_ref(arguments),
            context,
        )?;
        match text.as_string() {
            Some(text) => text.to_std_string_escaped(),
            None => "{}".to_string(),
        }
    } else {
        return Err(JsNativeError::typ()
            .with_message(format!(
                "tools.call: the arguments of {name} must be an object, such as {{path: \"app.log\"}} (got {})",
                if arguments.is_callable() {
                    "a function"
                } else if is_array(arguments) {
                    "an array"
                } else {
                    arguments.type_of()
                }
            ))
            .into());
    };
    if shared.borrow().uncollected >= COLLECT_EVERY {
        shared.borrow_mut().uncollected = 0;
        boa_gc::force_collect();
    }
    let observation = {
        let mut state = shared.borrow_mut();
        let observation = (state.call)(&name, &arguments);
        state.uncollected = state.uncollected.saturating_add(observation.len() as u64);
        state.calls = state.calls.saturating_add(1);
        state.inner_bytes = state.inner_bytes.saturating_add(observation.len() as u64);
        observation
    };
    fast::json_value(&observation, context)
}

/// Whether `value` is an array.
fn is_array(value: &JsValue) -> bool {
    value
        .as_object()
        .is_some_and(|o| boa_engine::object::builtins::JsArray::from_object(o).is_ok())
}

/// `console.log(...values)`: one line of the values, strings as they are and other values as
/// JSON (or `String(value)` when JSON cannot write them), joined by spaces.
fn console_log(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let shared = shared(context)?;
    if shared.borrow().log_full {
        return Ok(JsValue::undefined());
    }
    let mut line = String::new();
    for (i, value) in args.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        line.push_str(&show(value, &shared, context)?);
    }
    line.push('\n');
    let mut state = shared.borrow_mut();
    if state.log_full {
        return Ok(JsValue::undefined());
    }
    let room = MAX_LOG_BYTES - state.log.len() - LOG_CUT.len() - 1;
    if line.len() <= room {
        state.log.push_str(&line);
    } else {
        // What fits of the line (cut at a character), then the marker.
        let kept = line.floor_char_boundary(room.saturating_sub(1));
        if kept > 0 {
            state.log.push_str(&line[..kept]);
            state.log.push('\n');
        }
        state.log.push_str(LOG_CUT);
        state.log.push('\n');
        state.log_full = true;
    }
    Ok(JsValue::undefined())
}

/// A value as `console.log` shows it.
fn show(value: &JsValue, shared: &Shared, context: &mut Context) -> JsResult<String> {
    if let Some(s) = value.as_string() {
        return Ok(s.to_std_string_escaped());
    }
    let stringify = shared.borrow().stringify.clone();
    match stringify.call(&JsValue::undefined(), std::slice::from_ref(value), context) {
        Ok(json) if json.is_string() => Ok(json.to_string(context)?.to_std_string_escaped()),
        // `undefined`, a function, a symbol, or a cycle or BigInt (a TypeError).
        Ok(_) | Err(_) => Ok(value
            .to_string(context)
            .map(|s| s.to_std_string_escaped())
            .unwrap_or_else(|_| value.display().to_string())),
    }
}

/// The parser's message, with the position of an abrupt end (which it has none of).
fn syntax_message(error: &boa_engine::parser::Error, script: &str) -> String {
    match error {
        boa_engine::parser::Error::AbruptEnd => {
            let lines = script.lines().count().max(1);
            format!(
                "unexpected end of the script at line {lines} (a bracket, brace or string left open?)"
            )
        }
        e => e.to_string(),
    }
}

/// The message of an uncaught error, with where it was thrown when Boa knows.
fn uncaught(error: &JsError, prefix: &str, context: &mut Context) -> ScriptError {
    ScriptError::Uncaught(error_text(error, prefix, context))
}

/// `Name: message` (or the thrown value as `console.log` shows it) and where, as
/// ` (line L, column C)`.
fn error_text(error: &JsError, prefix: &str, context: &mut Context) -> String {
    // Boa's text of the error: its message, then its backtrace, a line per frame.
    let text = error.to_string();
    let Ok(value) = error.clone().into_opaque(context) else {
        // An engine error (a runtime limit): Boa's message and where.
        let message = text.lines().next().unwrap_or_default();
        return with_position(message, first_position(&text, prefix));
    };
    let (message, stack) = match value.as_object() {
        Some(object) if object.is::<boa_engine::builtins::error::Error>() => {
            let message = value
                .to_string(context)
                .map(|s| s.to_std_string_escaped())
                .unwrap_or_else(|_| "Error".into());
            let stack = object
                .get(js_string!("stack"), context)
                .ok()
                .and_then(|s| s.as_string().map(|s| s.to_std_string_escaped()));
            (message, stack)
        }
        _ => {
            let message = match shared(context) {
                Ok(shared) => show(&value, &shared, context).unwrap_or_default(),
                Err(_) => value.display().to_string(),
            };
            (message, None)
        }
    };
    // The backtrace of the error (`stack`), or of the throw itself.
    let position = stack
        .as_deref()
        .and_then(|stack| first_position(stack, prefix))
        .or_else(|| first_position(&text, prefix));
    with_position(&message, position)
}

/// `message (line L, column C)`, or `message` where the position is unknown.
fn with_position(message: &str, position: Option<(u32, u32)>) -> String {
    match position {
        Some((line, column)) => format!("{message} (line {line}, column {column})"),
        None => message.to_string(),
    }
}

/// The first `script:L:C` position in `text` (a backtrace), in the user's coordinates.
fn first_position(text: &str, prefix: &str) -> Option<(u32, u32)> {
    let marker = format!("{SOURCE_NAME}:");
    let mut rest = text;
    while let Some(at) = rest.find(&marker) {
        rest = &rest[at + marker.len()..];
        let mut numbers = rest.splitn(3, ':').take(2).map(leading_number);
        let (line, column) = (numbers.next().flatten(), numbers.next().flatten());
        if let (Some(line), Some(column)) = (line, column) {
            return Some(user_position(line, column, prefix));
        }
    }
    None
}

/// The number `text` starts with.
fn leading_number(text: &str) -> Option<u32> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

/// A position in the wrapped source as the user's: columns of the first line lose the
/// wrapper's prefix.
fn user_position(line: u32, column: u32, prefix: &str) -> (u32, u32) {
    if line == 1 {
        let shift = u32::try_from(prefix.len()).unwrap_or(0);
        (line, column.saturating_sub(shift).max(1))
    } else {
        (line, column)
    }
}

/// `text` with its `at line 1, col C` positions in the user's coordinates.
fn user_positions(text: &str, prefix: &str) -> String {
    const MARK: &str = "at line 1, col ";
    let Some(at) = text.find(MARK) else {
        return text.to_string();
    };
    let digits: String = text[at + MARK.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    match digits.parse::<u32>() {
        Ok(column) => format!(
            "{}{MARK}{}{}",
            &text[..at],
            user_position(1, column, prefix).1,
            &text[at + MARK.len() + digits.len()..]
        ),
        Err(_) => text.to_string(),
    }
}

#[cfg(test)]
mod tests;
