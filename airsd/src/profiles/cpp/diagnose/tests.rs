//! The diagnostics reader on real output: GCC 12 and Clang 14 compiling the same
//! seeded errors (`fixtures/errs.cpp`, a missing header, a template instantiated with
//! the wrong type), GNU ld and lld linking an undefined and a duplicate symbol, and
//! MSVC's format from a fixture written to its documented shape.

use super::*;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/profiles/cpp/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The error signatures found, by line.
fn errors(found: &[Diagnostic]) -> Vec<(Option<u32>, String)> {
    found
        .iter()
        .filter(|d| d.severity == DiagnosticSeverity::Error)
        .map(|d| (d.line, d.signature.clone()))
        .collect()
}

/// Asserts that each compiler's findings have `signature` at `line`.
fn signed_alike(compilers: &[(&str, &[Diagnostic])], line: u32, signature: &str) {
    for (name, found) in compilers {
        assert!(
            has(found, line, signature),
            "{name} line {line}: {:#?}",
            errors(found)
        );
    }
}

fn has(found: &[Diagnostic], line: u32, signature: &str) -> bool {
    found
        .iter()
        .any(|d| d.line == Some(line) && d.signature == signature)
}

#[test]
fn gcc_and_clang_give_the_same_signature_for_the_same_error() {
    let gcc = parse(&fixture("gcc.txt"));
    let clang = parse(&fixture("clang.txt"));
    let msvc = parse(&fixture("msvc.txt"));
    for (line, signature, in_msvc) in [
        (10, "undeclared-identifier:undeclared_thing", true),
        (11, "no-member:S::y", true),
        (12, "no-member:std::vectr", true),
        (13, "undeclared-identifier:Unknown", false),
        (14, "no-matching-function:takes", true),
        (15, "invalid-conversion", false),
        (16, "abstract-instantiation:A", false),
        (17, "incomplete-type:B", false),
        (18, "inaccessible-member:p", true),
        (19, "discards-const", false),
        (20, "narrowing", false),
    ] {
        signed_alike(&[("gcc", &gcc), ("clang", &clang)], line, signature);
        if in_msvc {
            assert!(
                has(&msvc, line, signature),
                "msvc line {line}: {:#?}",
                errors(&msvc)
            );
        }
    }
    // The missing `;` (GCC reports it at the next line, Clang at the end of the
    // declaration).
    let semi = |d: &[Diagnostic]| d.iter().any(|d| d.signature == "expected-token:;");
    assert!(semi(&gcc) && semi(&clang));
    for found in [&gcc, &clang] {
        assert!(found
            .iter()
            .any(|d| d.signature == "missing-include:missing_header.h"));
        assert!(found
            .iter()
            .any(|d| d.signature == "member-of-non-class:int"));
        assert!(found
            .iter()
            .any(|d| d.signature == "sign-compare" && d.severity == DiagnosticSeverity::Warning));
        assert!(found.iter().any(|d| d.signature == "missing-return"));
    }
    assert!(msvc
        .iter()
        .any(|d| d.signature == "missing-include:missing_header.h"));
    assert!(msvc.iter().any(|d| d.signature == "missing-return"));
    assert!(gcc
        .iter()
        .any(|d| d.signature == "unused-variable:unused_local"));
    assert!(msvc
        .iter()
        .any(|d| d.signature == "unused-variable:unused_local"));
}

#[test]
fn each_finding_has_its_place_flag_and_message() {
    let gcc = parse(&fixture("gcc.txt"));
    let d = gcc.iter().find(|d| d.line == Some(10)).unwrap();
    assert_eq!(d.file.as_deref(), Some("errs.cpp"));
    assert_eq!(d.column, Some(3));
    assert_eq!(
        d.message,
        "‘undeclared_thing’ was not declared in this scope"
    );
    assert_eq!(d.tool, Tool::Compiler);
    let w = gcc.iter().find(|d| d.signature == "sign-compare").unwrap();
    assert_eq!(w.code.as_deref(), Some("-Wsign-compare"));
    assert!(!w.message.contains("[-W"));
    let msvc = parse(&fixture("msvc.txt"));
    let d = msvc.iter().find(|d| d.line == Some(11)).unwrap();
    assert_eq!((d.column, d.code.as_deref()), (Some(11), Some("C2039")));
    assert_eq!(d.notes, ["errs.cpp(3): see declaration of 'S'"]);
}

#[test]
fn the_linkers_undefined_and_duplicate_symbols_are_named_alike() {
    for (name, tool) in [
        ("ld.txt", Tool::Ld),
        ("lld.txt", Tool::Lld),
        ("msvc.txt", Tool::Msvc),
    ] {
        let found = parse(&fixture(name));
        let sigs: Vec<&str> = found
            .iter()
            .filter(|d| d.tool == tool)
            .map(|d| d.signature.as_str())
            .collect();
        assert!(
            sigs.contains(&"undefined-reference:foo"),
            "{name}: {sigs:?}"
        );
        assert!(
            sigs.contains(&"multiple-definition:bar"),
            "{name}: {sigs:?}"
        );
    }
    // The drivers' summaries are not findings of their own.
    let ld = parse(&fixture("ld.txt"));
    assert!(
        ld.iter().all(|d| !d.message.contains("exit status")),
        "{ld:#?}"
    );
    let undefined = ld
        .iter()
        .find(|d| d.signature == "undefined-reference:foo")
        .unwrap();
    assert_eq!(undefined.file.as_deref(), Some("a.cpp"));
    assert_eq!(undefined.notes, ["in function main"]);
    let lld = parse(&fixture("lld.txt"));
    let d = lld
        .iter()
        .find(|d| d.signature == "undefined-reference:foo")
        .unwrap();
    assert_eq!(d.notes[0], "referenced by a.cpp");
}

#[test]
fn include_stacks_and_instantiation_chains_are_kept_as_notes() {
    let text = "In file included from src/a.h:3,\n                 from src/main.cpp:1:\nsrc/b.h:7:5: error: 'Widget' does not name a type\n";
    let found = parse(text);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].notes,
        ["In file included from src/a.h:3", "from src/main.cpp:1"]
    );
    assert_eq!(found[0].signature, "undeclared-identifier:Widget");
    let gcc = parse(&fixture("gcc.txt"));
    let d = gcc
        .iter()
        .find(|d| d.signature == "member-of-non-class:int")
        .unwrap();
    assert!(
        d.notes.iter().any(|n| n.contains("In instantiation of")),
        "{:?}",
        d.notes
    );
    assert!(
        d.notes.iter().any(|n| n.contains("required from here")),
        "{:?}",
        d.notes
    );
    let clang = parse(&fixture("clang.txt"));
    let d = clang
        .iter()
        .find(|d| d.signature == "member-of-non-class:int")
        .unwrap();
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("in instantiation of function template")),
        "{:?}",
        d.notes
    );
}

#[test]
fn streaming_in_pieces_finds_what_parsing_whole_does_and_stays_bounded() {
    let text = fixture("gcc.txt");
    let whole = parse(&text);
    let mut p = Parser::default();
    for chunk in text.as_bytes().chunks(13) {
        p.push(chunk);
    }
    assert_eq!(p.finish(), whole);
    let mut p = Parser::default();
    for _ in 0..(MAX_FINDINGS + 10) {
        p.push(b"a.cpp:1:1: error: expected ';' before '}' token\n");
    }
    p.push(&vec![b'x'; 1 << 20]);
    p.push(b"\n");
    let dropped = p.dropped;
    assert_eq!(p.finish().len(), MAX_FINDINGS);
    assert_eq!(dropped, 10);
}

#[test]
fn unknown_errors_still_repeat_under_one_signature() {
    let a = parse("x.cpp:3:1: error: some new complaint about 'foo' at 42 places\n");
    let b = parse("y.cpp:9:2: error: some new complaint about 'bar' at 7 places\n");
    assert_eq!(a[0].signature, b[0].signature);
    assert_eq!(a[0].signature, "error:some new complaint about _ at places");
}

#[test]
fn werror_colours_and_missing_libraries_are_read() {
    let clang = parse("a.cpp:3:7: error: unused variable 'x' [-Werror,-Wunused-variable]\n");
    let gcc = parse("a.cpp:3:7: error: unused variable ‘x’ [-Werror=unused-variable]\n");
    assert_eq!(clang[0].code.as_deref(), Some("-Wunused-variable"));
    assert_eq!(gcc[0].code.as_deref(), Some("-Wunused-variable"));
    assert_eq!(clang[0].signature, gcc[0].signature);
    let coloured = parse("\x1b[01m\x1b[Ka.cpp:2:10:\x1b[m\x1b[K \x1b[01;31m\x1b[Kerror: \x1b[m\x1b[K‘y’ was not declared in this scope\n");
    assert_eq!(coloured[0].signature, "undeclared-identifier:y");
    assert_eq!(coloured[0].line, Some(2));
    let ld = parse("/usr/bin/ld: cannot find -lfoo: No such file or directory\ncollect2: error: ld returned 1 exit status\n");
    assert_eq!(ld.len(), 1);
    assert_eq!(ld[0].signature, "missing-library:foo");
}

#[test]
fn gccs_c_errors_in_a_utf8_locale_sign_as_clangs_do() {
    // GCC 12 with LANG=C.UTF-8 (curly quotes) and Clang 14, on the same C file and
    // on an operator of a C++ struct.
    let gcc = parse(&fixture("gcc-utf8.txt"));
    let clang = parse(&fixture("clang-c.txt"));
    for (line, signature) in [
        (5, "invalid-operands"),
        (6, "undeclared-identifier:undeclared_thing"),
    ] {
        signed_alike(&[("gcc", &gcc), ("clang", &clang)], line, signature);
    }
    assert_eq!(
        errors(&gcc).len(),
        errors(&clang).len(),
        "{:#?} {:#?}",
        errors(&gcc),
        errors(&clang)
    );
}
