//! The semantic signature of a compiler or linker finding: the same for the same
//! error whichever compiler said it ("use of undeclared identifier 'x'" from Clang,
//! "'x' was not declared in this scope" from GCC and MSVC's C2065 are all
//! `undeclared-identifier:x`). The common errors and the linker's undefined and
//! duplicate symbols are named by rule; anything else falls back to its flag or code,
//! or to its message with the names and numbers taken out, so that a repeat of the
//! same failure is still recognised (the scheduler counts failures by it).

use air_proto::payload::DiagnosticSeverity;

/// The first name quoted in `text` ('x', ‘x’, `x', "x"), its quotes removed.
fn quoted(text: &str) -> Option<String> {
    quoted_all(text).into_iter().next()
}

/// Every name quoted in `text`, in order.
fn quoted_all(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let close = match c {
            '\'' | '"' => c,
            '`' => '\'',
            '‘' => '’',
            _ => continue,
        };
        let start = i + c.len_utf8();
        let mut end = None;
        for (j, d) in chars.by_ref() {
            if d == close {
                end = Some(j);
                break;
            }
        }
        match end {
            Some(e) => out.push(text[start..e].to_string()),
            None => break,
        }
    }
    out
}

/// A type or symbol as both compilers spell it: `struct S` and `S` alike, spaces
/// folded.
fn name(n: &str) -> String {
    let n = n
        .trim()
        .trim_start_matches("struct ")
        .trim_start_matches("class ")
        .trim_start_matches("union ")
        .trim_start_matches("enum ");
    n.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The function's name of `f(int)` or `int f(int)`: what is before `(`, its return
/// type dropped.
fn function(n: &str) -> String {
    let head = n.split('(').next().unwrap_or(n);
    name(head.rsplit(' ').next().unwrap_or(head))
}

/// The text between `start` and the next `end` after it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let (_, rest) = text.split_once(start)?;
    Some(rest.split_once(end).map_or(rest, |(a, _)| a))
}

/// The signature of a finding: its message, its flag or code, its severity.
pub fn signature(m: &str, code: Option<&str>, severity_of: DiagnosticSeverity) -> String {
    // GCC quotes with ‘ ’ in a UTF-8 locale and with ' ' in others: read alike.
    let plain;
    let m = if m.contains(['‘', '’']) {
        plain = m.replace(['‘', '’'], "'");
        plain.as_str()
    } else {
        m
    };
    let code = code.unwrap_or("");
    let rule = |kind: &str, what: Option<String>| match what {
        Some(w) if !w.is_empty() => format!("{kind}:{w}"),
        _ => kind.to_string(),
    };
    // The linkers: undefined and duplicate symbols.
    if let Some(sym) =
        between(m, "undefined reference to `", "'").or_else(|| m.strip_prefix("undefined symbol: "))
    {
        return rule("undefined-reference", Some(function(sym)));
    }
    if code == "LNK2019" || code == "LNK2001" {
        return rule("undefined-reference", symbol_of_lnk(m));
    }
    if let Some(sym) =
        between(m, "multiple definition of `", "'").or_else(|| m.strip_prefix("duplicate symbol: "))
    {
        return rule("multiple-definition", Some(function(sym)));
    }
    if let Some(lib) = m.strip_prefix("cannot find -l") {
        return rule("missing-library", Some(lib.to_string()));
    }
    if code == "LNK1104" {
        return rule("missing-library", quoted(m));
    }
    if code == "LNK2005" {
        return rule(
            "multiple-definition",
            quoted(m)
                .or_else(|| m.split_whitespace().next().map(str::to_string))
                .map(|s| function(&s)),
        );
    }
    // Undeclared names.
    if m.contains("was not declared in this scope")
        || m.contains("' undeclared (first use")
        || m.contains("' undeclared here")
        || m.starts_with("use of undeclared identifier")
        || code == "C2065"
    {
        return rule("undeclared-identifier", quoted(m).map(|n| name(&n)));
    }
    // Members: `'S' has no member named 'y'`, `no member named 'y' in 'S'`,
    // `'y': is not a member of 'S'`, `'vector' is not a member of 'std'`,
    // `no member named 'vector' in namespace 'std'`.
    if m.contains("has no member named") {
        let q = quoted_all(m);
        return rule("no-member", member(q.first(), q.get(1)));
    }
    if m.starts_with("no member named") {
        let q = quoted_all(m);
        return rule("no-member", member(q.get(1), q.first()));
    }
    if m.contains("is not a member of") || code == "C2039" {
        let q = quoted_all(m);
        return rule("no-member", member(q.get(1), q.first()));
    }
    // Unknown types: an undeclared name too (GCC reads `Unknown u;` as an
    // expression and says it was not declared).
    if m.starts_with("unknown type name") || m.contains("does not name a type") || code == "C2061" {
        return rule("undeclared-identifier", quoted(m).map(|n| name(&n)));
    }
    if m.starts_with("no template named") || m.starts_with("no type named") {
        let q = quoted_all(m);
        return rule("no-member", member(q.get(1), q.first()));
    }
    // A member of what is not a class: GCC's `request for member 'f' in 't', which
    // is of non-class type 'int'`, Clang's `member reference base type 'int' is not
    // a structure or union`.
    if m.starts_with("request for member") && m.contains("non-class type") {
        return rule("member-of-non-class", quoted_all(m).last().map(|n| name(n)));
    }
    if m.starts_with("member reference base type") {
        return rule("member-of-non-class", quoted(m).map(|n| name(&n)));
    }
    // Missing headers.
    if m.ends_with("file not found") || code == "C1083" {
        return rule("missing-include", quoted(m));
    }
    if m.ends_with("No such file or directory") && severity_of == DiagnosticSeverity::Error {
        return rule(
            "missing-include",
            m.split(':').next().map(|f| f.trim().to_string()),
        );
    }
    // Expected tokens: `expected ';' before 'x'`, `expected ',' or ';' before 'int'`,
    // `expected ';' at end of declaration`, MSVC's `syntax error: missing ';' before
    // …`; a missing `;` among the alternatives is the one named.
    if let Some(rest) = m.strip_prefix("expected ") {
        let wanted = [" before ", " at ", " after ", " in "]
            .iter()
            .filter_map(|w| rest.find(w))
            .min()
            .map_or(rest, |i| &rest[..i]);
        let tokens = quoted_all(wanted);
        let tok = if tokens.iter().any(|t| t == ";") {
            Some(";".to_string())
        } else {
            tokens
                .into_iter()
                .next()
                .or_else(|| Some(wanted.trim().to_string()))
        };
        return rule("expected-token", tok);
    }
    if m.starts_with("syntax error: missing") || code == "C2143" {
        return rule("expected-token", quoted(m));
    }
    // Calls.
    if m.starts_with("no matching function for call to")
        || m.starts_with("no matching member function for call to")
        || m.starts_with("no matching constructor for initialization of")
        || code == "C2672"
        || code == "C2664"
    {
        return rule("no-matching-function", quoted(m).map(|f| function(&f)));
    }
    // Clang names a call with the wrong number of arguments "no matching function";
    // GCC says "too few arguments to function 'int takes(int, int)'".
    if m.starts_with("too few arguments") || m.starts_with("too many arguments") || code == "C2660"
    {
        return rule("no-matching-function", quoted(m).map(|f| function(&f)));
    }
    if m.contains("no match for 'operator")
        || m.starts_with("invalid operands to binary")
        || code == "C2676"
        || code == "C2678"
    {
        return rule("invalid-operands", None);
    }
    // Conversions.
    if m.starts_with("cannot convert")
        || m.starts_with("no viable conversion")
        || m.starts_with("cannot initialize")
        || (m.starts_with("conversion from") && m.ends_with("requested"))
        || code == "C2440"
    {
        return rule("invalid-conversion", None);
    }
    if m.contains("narrowing conversion")
        || m.contains("cannot be narrowed")
        || m.contains("non-constant-expression cannot be narrowed")
    {
        return rule("narrowing", None);
    }
    // Definitions.
    if m.starts_with("redefinition of") || code == "C2084" || code == "C2374" {
        return rule("redefinition", quoted(m).map(|n| function(&n)));
    }
    if m.starts_with("conflicting declaration") || m.starts_with("conflicting types for") {
        return rule("conflicting-declaration", quoted(m).map(|n| function(&n)));
    }
    // Types that cannot be used so.
    if m.contains("incomplete type") || code == "C2027" {
        // GCC quotes the declaration (`'B b'`), Clang the type (`'B'`).
        let q = if m.starts_with("aggregate") {
            quoted(m).map(|d| name(&d).split(' ').next().unwrap_or("").to_string())
        } else {
            quoted_all(m).last().map(|n| name(n))
        };
        return rule("incomplete-type", q);
    }
    if m.contains("abstract type") || m.contains("is an abstract class") || code == "C2259" {
        return rule(
            "abstract-instantiation",
            quoted_all(m).last().map(|n| name(n)),
        );
    }
    if m.starts_with("use of deleted function")
        || m.starts_with("call to deleted")
        || m.starts_with("call to implicitly-deleted")
        || code == "C2280"
    {
        return rule("deleted-function", None);
    }
    if m.contains("discards qualifiers")
        || m.contains("but function is not marked const")
        || code == "C2662"
    {
        return rule("discards-const", None);
    }
    if m.contains("is private within this context")
        || m.contains("is a private member of")
        || m.contains("is protected within this context")
        || m.contains("is a protected member of")
        || code == "C2248"
    {
        let q = quoted_all(m);
        return rule("inaccessible-member", q.first().map(|n| member_name(n)));
    }
    // Returns.
    if m.contains("no return statement in function returning non-void")
        || m.contains("control reaches end of non-void function")
        || m.contains("non-void function does not return a value")
        || code == "-Wreturn-type"
        || code == "C4715"
        || code == "C4716"
    {
        return rule("missing-return", None);
    }
    if m.starts_with("return-statement with no value")
        || m.starts_with("non-void function") && m.contains("should return a value")
    {
        return rule("missing-return-value", None);
    }
    // Warnings that recur as errors under -Werror.
    if m.starts_with("unused variable") || code == "-Wunused-variable" || code == "C4101" {
        return rule("unused-variable", quoted(m));
    }
    if m.starts_with("unused parameter") || code == "-Wunused-parameter" || code == "C4100" {
        return rule("unused-parameter", quoted(m));
    }
    if m.contains("different signedness")
        || m.contains("integers of different signs")
        || code == "-Wsign-compare"
        || code == "C4018"
    {
        return rule("sign-compare", None);
    }
    if m.contains("is used uninitialized")
        || m.contains("may be used uninitialized")
        || m.contains("is uninitialized when used")
        || code == "C4700"
    {
        return rule("uninitialized", quoted(m));
    }
    if m.contains("implicit declaration of function") || code == "C4013" {
        return rule("implicit-declaration", quoted(m));
    }
    // Anything else: its flag or code, or its message without names and numbers.
    if !code.is_empty() {
        return format!("{}:{code}", severity(severity_of));
    }
    format!("{}:{}", severity(severity_of), shape(m))
}

/// `S::y` from the type and the member (either may be missing).
fn member(owner: Option<&String>, member: Option<&String>) -> Option<String> {
    match (owner, member) {
        (Some(o), Some(m)) => Some(format!("{}::{}", name(o), member_name(m))),
        (None, Some(m)) => Some(member_name(m)),
        _ => None,
    }
}

/// `x` of `int S::x` or `S::x`.
fn member_name(n: &str) -> String {
    let n = n.rsplit(' ').next().unwrap_or(n);
    n.rsplit("::").next().unwrap_or(n).to_string()
}

/// MSVC's LNK2019 names the symbol after "unresolved external symbol".
fn symbol_of_lnk(m: &str) -> Option<String> {
    let rest = m.split_once("unresolved external symbol ")?.1;
    let sym = match quoted(rest) {
        Some(q) => q,
        None => rest.split_whitespace().next()?.to_string(),
    };
    Some(function(&sym))
}

fn severity(s: DiagnosticSeverity) -> &'static str {
    match s {
        DiagnosticSeverity::Error => "error",
        DiagnosticSeverity::Warning => "warning",
        DiagnosticSeverity::Note => "note",
    }
}

/// A message with its quoted names and its numbers taken out, spaces folded.
fn shape(m: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    for c in m.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push('_');
            }
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '`' => quote = Some('\''),
                '‘' => quote = Some('’'),
                d if d.is_ascii_digit() => {}
                c => out.push(c),
            },
        }
    }
    out.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(120)
        .collect()
}
