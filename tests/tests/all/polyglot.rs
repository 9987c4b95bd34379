//! Evidence on every common stack, end to end: small real projects this test makes (a
//! Go module, a JavaScript package tested by `node --test` through `npm test`, a Rust
//! crate, a Python package in a virtual environment, a uv project, a Maven project
//! built offline from the distribution's Java packages, and a C# project where .NET
//! is installed), each given a `logic` task with a bug. A scripted model with the habits of real ones (it fixes before it tests,
//! pipes the check through `tail`, adds `-v`, runs it from the environment's own
//! binaries, cites the run by its bare id, calls a run of the program a smoke test)
//! completes each on its first dispatch, on the records airsd made of the real
//! toolchains; a lying one (it cites the failing run, or a run of no tests) never
//! completes.

use crate::daemon::Project;
use crate::evidence::verdicts;
use crate::run::{air as run_with_the_scripted_worker, db, expect, newest_session};

/// One stack's project: its files, what prepares it, the check its task names, the
/// fix, and the commands a model runs.
struct Stack {
    name: &'static str,
    /// The programs (and, starting with `/`, the files) the stack needs: without one
    /// the stack is skipped, saying so.
    needs: &'static [&'static str],
    files: &'static [(&'static str, &'static str)],
    /// Commands run in the project before the task (a virtual environment).
    setup: &'static [&'static str],
    check: &'static str,
    fix: (&'static str, &'static str),
    /// How the model runs the check after its fix.
    habit: &'static str,
    /// A run of the program the model calls a smoke test, if any.
    smoke: Option<&'static str>,
    /// A run of the check's program that runs no test.
    nothing: &'static str,
}

const STACKS: &[Stack] = &[
    Stack {
        name: "go",
        needs: &["go"],
        files: &[
            ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
            ("calc.go", "package calc\n\n// Add returns the sum.\nfunc Add(a, b int) int { return a - b }\n"),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d\", Add(2, 3))\n\t}\n}\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal(\"zero\")\n\t}\n}\n",
            ),
        ],
        setup: &[],
        check: "go test ./...",
        fix: ("calc.go", "package calc\n\n// Add returns the sum.\nfunc Add(a, b int) int { return a + b }\n"),
        habit: "go test -v -count=1 ./... 2>&1 | tail -20",
        smoke: None,
        nothing: "go test -run NoSuchTest ./...",
    },
    Stack {
        name: "node",
        needs: &["npm"],
        files: &[
            (
                "package.json",
                "{\"name\": \"calc\", \"version\": \"1.0.0\", \"private\": true, \"scripts\": {\"test\": \"node --test\"}}\n",
            ),
            ("calc.js", "exports.add = (a, b) => a - b;\n"),
            ("cli.js", "const { add } = require('./calc');\nconsole.log(add(Number(process.argv[2]), Number(process.argv[3])));\n"),
            (
                "test/calc.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc');\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\ntest('zero', () => assert.strictEqual(add(0, 0), 0));\n",
            ),
        ],
        setup: &[],
        check: "npm test",
        fix: ("calc.js", "exports.add = (a, b) => a + b;\n"),
        habit: "timeout 120 npm test --silent 2>&1 | tail -20",
        smoke: Some("node cli.js 2 3"),
        nothing: "npm test -- --test-name-pattern=nothing-matches",
    },
    Stack {
        name: "rust",
        needs: &["cargo"],
        files: &[
            ("Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"),
            (
                "src/lib.rs",
                "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n\n    #[test]\n    fn zero() {\n        assert_eq!(super::add(0, 0), 0);\n    }\n}\n",
            ),
        ],
        setup: &[],
        check: "cargo test",
        fix: (
            "src/lib.rs",
            "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n\n    #[test]\n    fn zero() {\n        assert_eq!(super::add(0, 0), 0);\n    }\n}\n",
        ),
        habit: "cargo test -q --offline 2>&1 | tail -20",
        smoke: None,
        nothing: "cargo test no_such_test",
    },
    Stack {
        name: "python venv",
        needs: &["python3"],
        files: &[
            ("calc/__init__.py", "def add(a, b):\n    return a - b\n"),
            (
                "tests/test_calc.py",
                "import unittest\n\nfrom calc import add\n\n\nclass Add(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
            ),
        ],
        setup: &["python3 -m venv --without-pip .venv"],
        check: "python3 -m unittest discover -s tests",
        fix: ("calc/__init__.py", "def add(a, b):\n    return a + b\n"),
        habit: "cd $ROOT && .venv/bin/python -m unittest discover -s tests -v 2>&1 | tail -20",
        smoke: Some(".venv/bin/python -c 'import calc; print(calc.add(2, 3))'"),
        nothing: "python3 -m unittest discover -s tests -p 'nothing_*.py'",
    },
    Stack {
        name: "uv",
        needs: &["uv", "python3"],
        files: &[
            (
                "pyproject.toml",
                "[project]\nname = \"calc\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\ndependencies = []\n",
            ),
            ("calc/__init__.py", "def add(a, b):\n    return a - b\n"),
            (
                "tests/test_calc.py",
                "import unittest\n\nfrom calc import add\n\n\nclass Add(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
            ),
        ],
        // The lock file is the project's; the environment is the person's, made
        // before the run (a task's worktree borrows it).
        setup: &[
            "uv lock -q && git add uv.lock && git -c user.email=t@t -c user.name=t commit -qm lock",
            "uv sync -q",
        ],
        check: "uv run python -m unittest discover -s tests",
        fix: ("calc/__init__.py", "def add(a, b):\n    return a + b\n"),
        habit: "uv run python -m unittest discover -s tests -v 2>&1 | tail -20",
        smoke: Some("uv run python -c 'import calc; print(calc.add(2, 3))'"),
        nothing: "uv run python -m unittest discover -s tests -p 'nothing_*.py'",
    },
    // Maven with no network: the plugins and JUnit come from the distribution's
    // repository (Debian's `/usr/share/maven-repo`), named as the project's mirror.
    Stack {
        name: "maven",
        needs: &[
            "mvn",
            "javac",
            "/usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin/2.22.3",
            "/usr/share/maven-repo/org/apache/maven/plugins/maven-compiler-plugin/3.10.1",
            "/usr/share/maven-repo/org/apache/maven/plugins/maven-resources-plugin/3.3.0",
            "/usr/share/maven-repo/junit/junit/4.13.2",
        ],
        files: &[
            (".gitignore", "target/\n"),
            ("pom.xml", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  <groupId>example</groupId>\n  <artifactId>calc</artifactId>\n  <version>1.0</version>\n  <properties>\n    <maven.compiler.release>17</maven.compiler.release>\n    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>\n  </properties>\n  <dependencies>\n    <dependency>\n      <groupId>junit</groupId>\n      <artifactId>junit</artifactId>\n      <version>4.13.2</version>\n      <scope>test</scope>\n    </dependency>\n  </dependencies>\n  <build>\n    <plugins>\n      <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.0</version></plugin>\n      <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>\n      <plugin><artifactId>maven-surefire-plugin</artifactId><version>2.22.3</version></plugin>\n    </plugins>\n  </build>\n</project>\n"),
            (
                ".mvn/settings.xml",
                "<settings>\n  <mirrors>\n    <mirror>\n      <id>distribution</id>\n      <mirrorOf>*</mirrorOf>\n      <url>file:///usr/share/maven-repo</url>\n    </mirror>\n  </mirrors>\n</settings>\n",
            ),
            (".mvn/maven.config", "--settings .mvn/settings.xml\n"),
            (
                "src/main/java/calc/Calc.java",
                "package calc;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        return a - b;\n    }\n}\n",
            ),
            (
                "src/test/java/calc/CalcTest.java",
                "package calc;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\npublic class CalcTest {\n    @Test\n    public void adds() {\n        assertEquals(5, Calc.add(2, 3));\n    }\n\n    @Test\n    public void zero() {\n        assertEquals(0, Calc.add(0, 0));\n    }\n}\n",
            ),
        ],
        setup: &[],
        check: "mvn test",
        fix: (
            "src/main/java/calc/Calc.java",
            "package calc;\n\npublic class Calc {\n    public static int add(int a, int b) {\n        return a + b;\n    }\n}\n",
        ),
        habit: "mvn -q test 2>&1 | tail -20",
        smoke: None,
        nothing: "mvn test -Dtest=NoSuchTest -DfailIfNoTests=false",
    },
    // C# through NuGet: where `dotnet` is installed (Debian does not ship it).
    Stack {
        name: "dotnet",
        needs: &["dotnet"],
        files: &[
            (
                "Calc.Tests.csproj",
                "<Project Sdk=\"Microsoft.NET.Sdk\">\n  <PropertyGroup>\n    <TargetFramework>net$(NETCoreAppMaximumVersion)</TargetFramework>\n    <IsPackable>false</IsPackable>\n  </PropertyGroup>\n  <ItemGroup>\n    <PackageReference Include=\"Microsoft.NET.Test.Sdk\" Version=\"17.12.0\" />\n    <PackageReference Include=\"xunit\" Version=\"2.9.3\" />\n    <PackageReference Include=\"xunit.runner.visualstudio\" Version=\"2.8.2\" />\n  </ItemGroup>\n</Project>\n",
            ),
            (
                "Calc.cs",
                "namespace Calc;\n\npublic static class Arith\n{\n    public static int Add(int a, int b) => a - b;\n}\n",
            ),
            (
                "CalcTests.cs",
                "namespace Calc;\n\nusing Xunit;\n\npublic class CalcTests\n{\n    [Fact]\n    public void Adds() => Assert.Equal(5, Arith.Add(2, 3));\n\n    [Fact]\n    public void Zero() => Assert.Equal(0, Arith.Add(0, 0));\n}\n",
            ),
        ],
        setup: &[],
        check: "dotnet test",
        fix: (
            "Calc.cs",
            "namespace Calc;\n\npublic static class Arith\n{\n    public static int Add(int a, int b) => a + b;\n}\n",
        ),
        habit: "dotnet test --nologo -v q 2>&1 | tail -20",
        smoke: None,
        nothing: "dotnet test --filter FullyQualifiedName~NoSuchTest",
    },
];

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The plan of an honest model and of a liar, for one stack.
fn plan(stack: &Stack) -> String {
    let (path, fixed) = stack.fix;
    // `$ROOT` is where the agent is told it works, as the scripted worker fills it.
    let habit = stack.habit;
    let mut calls = format!(
        "air-test-call: fs.read {{\"path\": {p}}}\nair-test-call: fs.write {{\"path\": {p}, \"content\": {c}}}\nair-test-call: shell.run {{\"command\": {h}}}\n",
        p = json(path),
        c = json(fixed),
        h = json(habit),
    );
    let mut evidence = String::from(
        r#"{"id": "e1", "kind": "command_run", "ref": "$RUN_1", "claim": "the tests pass", "evidence_type": "test_pass"}"#,
    );
    if let Some(smoke) = stack.smoke {
        calls.push_str(&format!(
            "air-test-call: shell.run {{\"command\": {}}}\n",
            json(smoke)
        ));
        evidence.push_str(r#", {"id": "e2", "kind": "artifact_excerpt", "ref": "$RUN_2", "claim": "it prints 5", "evidence_type": "smoke_test"}"#);
    }
    let check = stack.check;
    format!(
        "# {name}\n\n## Task T1: fix add\n\n- category: logic\n- verify: `{check}`\n\nair-test: executor=claim\n{calls}air-test-claim-1: {{\"evidence_refs\": [{evidence}], \"verification\": [{{\"name\": {c}, \"status\": \"passed\", \"evidence_refs\": [\"$RUN_1\"]}}]}}\n\n## Task T2: claim the failing run\n\n- category: logic\n- verify: `{check}`\n- depends: T1\n\nair-test: executor=claim,claim architecture_designer=stop\nair-test-call: shell.run {{\"command\": {nothing}}}\nair-test-claim-1: {{\"evidence_refs\": [{{\"id\": \"e1\", \"kind\": \"command_run\", \"ref\": \"$RUN_1\", \"claim\": \"tests pass\", \"evidence_type\": \"test_pass\"}}], \"verification\": [{{\"name\": {c}, \"status\": \"passed\", \"evidence_refs\": [\"$RUN_1\"]}}]}}\nair-test-claim-2: {{\"evidence_refs\": [{{\"id\": \"e1\", \"kind\": \"command_run\", \"ref\": \"$RUN_1\", \"claim\": \"tests pass\", \"evidence_type\": \"test_pass\"}}]}}\n",
        name = stack.name,
        c = json(check),
        nothing = json(stack.nothing),
    )
}

/// Runs `plan` in the project with the scripted worker: its output, each executor's
/// verdict, and each task's status by id.
#[allow(clippy::type_complexity)]
fn carry_out(
    p: &Project,
    plan: &str,
) -> (
    std::process::Output,
    Vec<(String, air_proto::gate::Verdict)>,
    impl Fn(&str) -> String,
) {
    std::fs::write(p.root.join("plan.md"), plan).unwrap();
    let out = run_with_the_scripted_worker(p, &["run", "--plan", "plan.md", "--json"]);
    let session = newest_session(p);
    let v = verdicts(p, &session);
    let conn = db(p, &session);
    let status = move |id: &str| -> String {
        conn.query_row("SELECT status FROM tasks WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };
    (out, v, status)
}

fn sh(root: &std::path::Path, command: &str) {
    let out = std::process::Command::new("bash")
        .args(["-c", command])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The first of `needs` missing here: a program not on the path, or a file.
fn missing(needs: &[&'static str]) -> Option<&'static str> {
    needs.iter().copied().find(|need| {
        if need.starts_with('/') {
            !std::path::Path::new(need).exists()
        } else {
            !std::process::Command::new("bash")
                .args(["-c", &format!("command -v {need}")])
                .output()
                .is_ok_and(|o| o.status.success())
        }
    })
}

#[test]
fn honest_work_completes_on_every_stack_and_a_liar_never_does() {
    let mut ran = 0;
    for stack in STACKS {
        if let Some(need) = missing(stack.needs) {
            eprintln!(
                "polyglot: skipping {}: `{need}` is not here ({})",
                stack.name,
                if stack.name == "dotnet" {
                    "the distribution does not ship .NET, so tests/run cannot install it"
                } else {
                    "tests/run installs it"
                }
            );
            continue;
        }
        ran += 1;
        let p = Project::new();
        for (path, body) in stack.files {
            let file = p.root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
        sh(
            &p.root,
            "git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm start",
        );
        for command in stack.setup {
            sh(&p.root, command);
        }
        let (out, v, statuses) = carry_out(&p, &plan(stack));
        let status = |id: &str| statuses(id);
        // The honest model completes on its first dispatch.
        assert_eq!(status("T1"), "completed", "{}: {v:#?}", stack.name);
        let first = v.iter().find(|(a, _)| a == "T1-executor-1").unwrap();
        assert!(first.1.passed(), "{}: {:#?}", stack.name, first.1);
        let kinds: Vec<_> = first.1.counted.iter().map(|c| c.evidence_type).collect();
        use air_proto::task::EvidenceType::{BuildPass, TestPass};
        assert!(
            kinds.contains(&BuildPass) && kinds.contains(&TestPass),
            "{}: {kinds:?}",
            stack.name
        );
        // The liar never does: its run ran no test.
        assert_eq!(status("T2"), "blocked", "{}: {v:#?}", stack.name);
        let lies: Vec<_> = v.iter().filter(|(a, _)| a.starts_with("T2-")).collect();
        assert!(!lies.is_empty());
        for (agent, verdict) in &lies {
            assert!(!verdict.passed(), "{}: {agent}", stack.name);
            assert!(
                verdict
                    .refused
                    .iter()
                    .any(|r| r.contains("shows no test_pass") || r.contains("missing test_pass")),
                "{}: {agent}: {verdict:#?}",
                stack.name
            );
        }
        // The check's refusal names what differed.
        assert!(
            lies[0]
                .1
                .refused
                .iter()
                .any(|r| r.contains("does not count as it")),
            "{}: {:#?}",
            stack.name,
            lies[0].1
        );
        expect(&out, 3);
    }
    assert!(ran >= 3, "fewer than three stacks could be tried");
}

/// A task with no category (the plan's default, and what `air chat` hands on) needs
/// the evidence of what its attempt changes: code its build and tests, a README
/// nothing; a change to code with no run behind it never completes.
#[test]
fn a_task_without_a_category_needs_what_its_change_needs() {
    let node = &STACKS[1];
    if missing(node.needs).is_some() {
        eprintln!("polyglot: skipping: `npm` is not installed (tests/run installs it)");
        return;
    }
    let p = Project::new();
    for (path, body) in node.files {
        let file = p.root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, body).unwrap();
    }
    std::fs::write(p.root.join("README.md"), "# calc\n").unwrap();
    sh(
        &p.root,
        "git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm start",
    );
    let (path, fixed) = node.fix;
    let plan = format!(
        "# No categories\n\n## Task T1: fix add\n\nair-test: executor=claim\nair-test-call: fs.read {{\"path\": {p}}}\nair-test-call: fs.write {{\"path\": {p}, \"content\": {c}}}\nair-test-call: shell.run {{\"command\": \"npm test 2>&1 | tail -20\"}}\n\n## Task T2: say how to run it\n\n- depends: T1\n\nair-test: executor=claim\nair-test-call: fs.read {{\"path\": \"README.md\"}}\nair-test-call: fs.write {{\"path\": \"README.md\", \"content\": \"# calc\\n\\nnode cli.js 2 3\\n\"}}\n\n## Task T3: comment add, unchecked\n\n- depends: T2\n\nair-test: executor=claim architecture_designer=stop\nair-test-call: fs.read {{\"path\": {p}}}\nair-test-call: fs.write {{\"path\": {p}, \"content\": {c2}}}\n",
        p = json(path),
        c = json(fixed),
        c2 = json(&format!("// Adds two numbers.\n{fixed}")),
    );
    let (out, v, status) = carry_out(&p, &plan);
    assert_eq!(status("T1"), "completed", "{v:#?}");
    let t1 = v.iter().find(|(a, _)| a == "T1-executor-1").unwrap();
    use air_proto::task::EvidenceType::{BuildPass, TestPass};
    let kinds: Vec<_> = t1.1.counted.iter().map(|c| c.evidence_type).collect();
    assert_eq!(kinds, [BuildPass, TestPass], "{:#?}", t1.1);
    assert_eq!(status("T2"), "completed", "{v:#?}");
    assert_eq!(status("T3"), "blocked", "{v:#?}");
    let t3 = v.iter().find(|(a, _)| a == "T3-executor-1").unwrap();
    assert!(
        t3.1.refused
            .iter()
            .any(|r| r.starts_with("missing build_pass"))
            && t3
                .1
                .refused
                .iter()
                .any(|r| r.starts_with("missing test_pass")),
        "{:#?}",
        t3.1
    );
    expect(&out, 3);
}
