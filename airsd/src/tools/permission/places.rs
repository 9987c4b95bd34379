//! The PermissionEngine's tables of places: credential stores, system paths, the
//! user's files that start code, the project's files that run code later, what of
//! the home commands read, what they never see. Data only: the engine decides with
//! them (`super`).

/// Where the credential stores are (a person confirms any access).
pub const CREDENTIALS: &[&str] = &[
    "~/.ssh/**",
    "~/.aws/**",
    "~/.gnupg/**",
    "~/.azure/**",
    "~/.kube/**",
    "~/.config/gcloud/**",
    "~/.config/gh/hosts.yml",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.password-store/**",
    "~/.local/share/keyrings/**",
    "~/Library/Keychains/**",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/sudoers.d/**",
    "/root/.ssh/**",
    "**/.env",
    "**/.env.*",
    "**/id_rsa",
    "**/id_ecdsa",
    "**/id_ed25519",
    "**/*.keychain",
    "**/*.keychain-db",
];

/// `.env` files meant to be shared, not secrets.
pub const ENV_EXAMPLES: &[&str] = &[".env.example", ".env.sample", ".env.template", ".env.dist"];

/// System paths (D-031): changing them needs a person, always.
pub const SYSTEM: &[&str] = &[
    "/etc/**",
    "/boot/**",
    "/efi/**",
    "/usr/**",
    "/bin/**",
    "/sbin/**",
    "/lib/**",
    "/lib32/**",
    "/lib64/**",
    "/libx32/**",
    "/sys/**",
    "/proc/**",
    "/dev/**",
    "/var/**",
    "/snap/**",
    "/System/**",
    "/Library/**",
    "/private/etc/**",
    "/private/var/**",
];

/// Files in the home directory that start code on their own (a shell's start-up
/// files, git's configuration, services, autostart entries): changing one is
/// system-sensitive, and commands see them read-only.
pub const AUTOSTART: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".mkshrc",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".inputrc",
    ".gitconfig",
    ".config/git",
    ".config/fish",
    ".config/systemd/user",
    ".config/autostart",
    ".config/environment.d",
    ".local/share/systemd/user",
    ".ssh/authorized_keys",
    ".ssh/rc",
    ".ssh/config",
    "Library/LaunchAgents",
];

/// Files of a project that make code run on a person's machine or in CI without
/// anyone running the project's own code: an editor's tasks and settings, a
/// directory's environment, another agent's hooks and tool servers, a container
/// definition, CI pipelines, git's attributes (which name filters) and submodules,
/// commit hooks' managers. Relative to the project root; `**/` at any depth.
pub const CODE_CONFIG: &[&str] = &[
    ".envrc",
    "**/.envrc",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".vscode/launch.json",
    ".idea/workspace.xml",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/hooks/**",
    ".mcp.json",
    ".cursor/mcp.json",
    ".codex/**",
    ".devcontainer/**",
    ".devcontainer.json",
    ".github/workflows/**",
    ".github/actions/**",
    ".gitlab-ci.yml",
    ".circleci/**",
    ".travis.yml",
    ".buildkite/**",
    "azure-pipelines.yml",
    "Jenkinsfile",
    ".gitattributes",
    "**/.gitattributes",
    ".gitmodules",
    ".pre-commit-config.yaml",
    ".husky/**",
    "lefthook.yml",
    ".lefthook.yml",
];

/// Devices anyone writes without a trace to keep (no backup, no question).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/tty",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/full",
];

/// Under the system paths, places that are everyone's to write.
pub const NOT_SYSTEM: &[&str] = &[
    "/dev/shm/**",
    "/var/tmp/**",
    "/private/var/tmp/**",
    "/private/var/folders/**",
];

/// What of the home directory commands read (an allowlist): the toolchains, package
/// managers and their caches, and the tools' own configuration. The rest of the home
/// (documents, other projects and their secrets, histories, backups, stores air does
/// not know) is not read; permissions.yaml `readable_roots` adds places.
pub const HOME_READ: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".nvm",
    ".node-gyp",
    ".cache",
    ".local/bin",
    ".local/lib",
    ".local/share/virtualenvs",
    ".local/share/pnpm",
    ".local/pipx",
    ".local/state",
    ".config/git",
    ".config/pip",
    ".config/uv",
    ".config/pypoetry",
    ".config/yarn",
    ".config/clangd",
    ".config/nvim",
    ".pyenv",
    ".rbenv",
    ".rye",
    ".virtualenvs",
    ".conda",
    ".condarc",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    "mambaforge",
    ".sdkman",
    ".gradle",
    ".m2",
    ".ivy2",
    ".sbt",
    "go",
    ".go",
    ".dotnet",
    ".nuget",
    ".yarn",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpm-store",
    ".bun",
    ".deno",
    ".volta",
    ".asdf",
    ".tool-versions",
    ".julia",
    ".ghcup",
    ".cabal",
    ".stack",
    ".opam",
    ".elan",
    ".nix-profile",
    ".ccache",
    ".conan",
    ".conan2",
    ".cpm",
    ".vcpkg",
    ".gitconfig",
    ".gitignore_global",
    ".npmrc",
    ".editorconfig",
    ".clang-format",
    ".clang-tidy",
];

/// Credential stores whose files are indexed by inode.
pub const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".azure",
    ".kube",
    ".config/gcloud",
    ".password-store",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
];

/// Credential stores of the home directory hidden from commands besides
/// [`CREDENTIAL_DIRS`].
pub const HIDDEN_IN_HOME: &[&str] = &[
    ".config/gh/hosts.yml",
    ".cargo/credentials",
    ".local/share/keyrings",
    "Library/Keychains",
];

/// Secrets of the system hidden from commands (they matter to a root command).
pub const HIDDEN_SYSTEM: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/root/.ssh",
];
