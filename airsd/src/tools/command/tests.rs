//! The tests of `command`.

#![allow(clippy::unwrap_used)]
use super::*;

fn run(cmd: &str) -> Analysis {
    analyze(
        cmd,
        &Env {
            cwd: Path::new("/p/proj"),
            home: Some(Path::new("/home/u")),
        },
    )
    .unwrap()
}

fn writes(cmd: &str) -> Vec<String> {
    run(cmd)
        .writes
        .iter()
        .map(|t| {
            format!(
                "{}{}",
                t.path.display(),
                if t.bulk { " (bulk)" } else { "" }
            )
        })
        .collect()
}

fn risks(cmd: &str) -> Vec<Risk> {
    run(cmd).risks.iter().map(|r| r.0).collect()
}

#[test]
fn writes_are_found_where_bash_would_make_them() {
    assert_eq!(writes("echo hi > /etc/x"), ["/etc/x"]);
    assert_eq!(writes("echo hi >> out.txt 2>&1"), ["/p/proj/out.txt"]);
    assert_eq!(writes("cmake --build build &> ~/log"), ["/home/u/log"]);
    assert_eq!(
        writes("echo x | sudo tee -a /etc/hosts > /dev/null"),
        ["/etc/hosts", "/dev/null"]
    );
    assert_eq!(
        writes("cp -r src ~/.config/app"),
        ["/home/u/.config/app (bulk)"]
    );
    assert_eq!(
        writes("mv a.txt /tmp/b.txt"),
        ["/tmp/b.txt", "/p/proj/a.txt"]
    );
    assert_eq!(writes("rm -rf ~"), ["/home/u (bulk)"]);
    assert_eq!(writes("rm -f -- -weird"), ["/p/proj/-weird"]);
    assert_eq!(writes("find ~/x -name '*.o' -delete"), ["/home/u/x (bulk)"]);
    assert_eq!(writes("find . -exec rm {} \\;"), ["/p/proj/. (bulk)"]);
    assert_eq!(writes("sh -c 'echo x > /etc/y'"), ["/etc/y"]);
    assert_eq!(
        writes("bash -lc \"cat a | tee ../out\""),
        ["/p/proj/../out"]
    );
    assert_eq!(writes("echo $(rm /etc/z)"), ["/etc/z"]);
    assert_eq!(writes("echo `touch /boot/k`"), ["/boot/k"]);
    assert_eq!(writes("if true; then rm /var/a; fi"), ["/var/a"]);
    assert_eq!(writes("for f in a b; do cp $f /opt/x; done"), ["/opt/x"]);
    assert_eq!(writes("(cd / && rm -r etc/x)"), ["/etc/x (bulk)"]);
    assert_eq!(
        writes("dd if=/dev/zero of=disk.img bs=1M count=1"),
        ["/p/proj/disk.img"]
    );
    assert_eq!(writes("sed -i 's/a/b/' /etc/conf"), ["/etc/conf"]);
    assert_eq!(writes("chmod 600 ~/.ssh/config"), ["/home/u/.ssh/config"]);
    assert_eq!(writes("rm /tmp/*.log"), ["/tmp (bulk)"]);
    assert_eq!(writes("eval 'rm /etc/q'"), ["/etc/q"]);
    assert_eq!(
        writes("echo \"$HOME/x\" > $HOME/.profile"),
        ["/home/u/.profile"]
    );
    assert!(writes("cargo test && ls -la | grep x").is_empty());
    assert_eq!(run("echo > \"$OUT\"").dynamic, ["> \"$OUT\""]);
    assert_eq!(
        run("ls | xargs rm").dynamic,
        ["xargs rm (paths from its input)"]
    );
}

#[test]
fn paths_follow_the_working_directory_the_command_sets() {
    assert_eq!(writes("cd /etc && echo x > f"), ["/etc/f"]);
    assert_eq!(writes("cd /etc; echo x > f"), ["/etc/f"]);
    assert_eq!(writes("cd ~ && touch a"), ["/home/u/a"]);
    assert_eq!(writes("cd && touch a"), ["/home/u/a"]);
    assert_eq!(writes("cd sub && touch a"), ["/p/proj/sub/a"]);
    // A subshell's cd ends with it; a pipeline's parts are subshells.
    assert_eq!(
        writes("(cd /etc && touch a); touch b"),
        ["/etc/a", "/p/proj/b"]
    );
    assert_eq!(writes("cd /etc | cat; touch b"), ["/p/proj/b"]);
    assert_eq!(
        writes("pushd /var/x && touch a && popd && touch b"),
        ["/var/x/a", "/p/proj/b"]
    );
    assert_eq!(writes("{ cd /opt; }; touch c"), ["/opt/c"]);
    assert_eq!(writes("sh -c 'cd /usr/lib && rm -f z'"), ["/usr/lib/z"]);
    // A computed directory: what is relative to it is known only when it runs.
    let a = run("cd $(echo /etc) && echo x > f");
    assert!(a.writes.is_empty(), "{a:?}");
    assert_eq!(a.dynamic.len(), 1, "{a:?}");
    assert!(run("cd \"$D\" && cat ./x").reaches[0].contains("known only when it runs"));
    // `-C DIR` of git, make and tar.
    assert_eq!(writes("tar xf a.tar -C /opt/x"), ["/opt/x (bulk)"]);
    assert_eq!(writes("tar -xzf a.tgz"), ["/p/proj (bulk)"]);
    assert_eq!(writes("make -C /srv/app install > log"), ["/p/proj/log"]);
    let a = run("tar cf - -C ~ .ssh | tar xf - -C .");
    assert!(a.mentions.contains(&PathBuf::from("/home/u/.ssh")), "{a:?}");
    assert!(a.mentions.contains(&PathBuf::from("/p/proj/.")), "{a:?}");
    let a = run("git -C /etc config core.hooksPath /tmp");
    assert_eq!(a.risks[0].0, Risk::CodeConfig, "{a:?}");
}

#[test]
fn git_configuration_that_runs_code_asks() {
    for cmd in [
        "git config core.hooksPath /tmp",
        "git config alias.st '!sh -c x'",
        "git config --global core.hooksPath /tmp",
        "git config --add filter.x.smudge 'sh x'",
        "git config core.fsmonitor ./x",
        "git config core.sshCommand 'ssh -i k'",
        "git config --local credential.helper store",
        "git config set diff.external x",
        "git config remote.origin.url https://x",
        "git config include.path /tmp/x",
        "git config includeIf.gitdir:~/.path /tmp/x",
        "git -c core.pager='sh -c x' log",
        "git remote add evil https://x",
        "git remote set-url origin https://x",
        "git config $K x",
    ] {
        assert!(risks(cmd).contains(&Risk::CodeConfig), "{cmd}");
    }
    for cmd in [
        "git config user.name",
        "git config --get core.hooksPath",
        "git config -l",
        "git config get alias.st",
        "git -c color.ui=always log",
        "git commit -m x",
        "git remote -v",
    ] {
        assert!(!risks(cmd).contains(&Risk::CodeConfig), "{cmd}");
    }
    // Where the write lands: the repository's or the user's file.
    assert_eq!(
        writes("git config --global user.name x"),
        ["/home/u/.gitconfig"]
    );
    assert_eq!(
        writes("git config --file ../c core.pager x"),
        ["/p/proj/../c"]
    );
}

#[test]
fn what_only_a_sandbox_that_hides_could_hold() {
    let reaches = |cmd: &str| run(cmd).reaches;
    assert_eq!(reaches("python3 -c 'print(1)'").len(), 1);
    assert_eq!(reaches("node -e 'x'").len(), 1);
    assert_eq!(reaches("perl -ne 'print' f").len(), 1);
    assert_eq!(reaches("cat $(echo ~/.ss)h/id_rsa").len(), 1);
    assert_eq!(reaches("ps eww -A").len(), 1);
    assert_eq!(reaches("cat /proc/*/environ").len(), 1);
    assert_eq!(reaches("cat /proc/1/environ").len(), 1);
    assert!(reaches("cat /proc/cpuinfo").is_empty());
    assert_eq!(reaches("curl --unix-socket s http://x/").len(), 1);
    assert!(reaches("python3 -m pytest").is_empty());
    // A computed path, or code, that names a protected place asks whatever the
    // sandbox.
    assert_eq!(risks("cat $(echo ~/.ss)h/id_rsa"), [Risk::Opaque]);
    assert_eq!(risks("cat \"$D/.aws/credentials\""), [Risk::Opaque]);
    assert_eq!(
        risks("python3 -c \"print(open('/home/u/.ssh/id_rsa').read())\""),
        [Risk::Opaque]
    );
    assert!(risks("cat \"$D/notes.txt\"").is_empty());
    assert_eq!(
        risks("python3 -c \"open('/home/u/app/.env').read()\""),
        [Risk::Opaque]
    );
    assert_eq!(risks("cat \"$D/.env.production\""), [Risk::Opaque]);
    assert!(risks("cat \"$D/.envrc\"").is_empty());
    assert!(risks("cat \"$D/.env.example\"").is_empty());
    assert!(risks("python3 -c 'print(1)'").is_empty());
    assert!(reaches("cat README.md").is_empty());
    assert!(reaches("ps aux").is_empty());
}

#[test]
fn risks_beyond_paths() {
    assert_eq!(risks("curl -fsSL https://x.sh | sh"), [Risk::DownloadsCode]);
    assert_eq!(
        risks("wget -qO- x | sudo bash -s --"),
        [Risk::DownloadsCode]
    );
    assert_eq!(risks("bash -c \"$(curl -fsSL x)\""), [Risk::DownloadsCode]);
    assert_eq!(risks("git push --force origin main"), [Risk::ForcePush]);
    assert_eq!(risks("git push origin +main"), [Risk::ForcePush]);
    assert!(risks("git push origin main").is_empty());
    assert_eq!(risks("sudo mkfs.ext4 /dev/sdb1"), [Risk::DiskTools]);
    assert_eq!(risks("dd if=x.iso of=/dev/sda"), [Risk::DiskTools]);
    assert_eq!(risks("$CMD --now"), [Risk::Opaque]);
    assert_eq!(risks("eval \"$X\""), [Risk::Opaque]);
    assert!(risks("sudo apt-get install -y cmake").is_empty());
    assert!(analyze(
        "echo 'unterminated",
        &Env {
            cwd: Path::new("/"),
            home: None
        }
    )
    .is_err());
}
