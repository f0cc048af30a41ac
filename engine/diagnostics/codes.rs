//! Every diagnostic code toolgate reports, with its stable string, default severity and
//! documentation (what it means, why it matters, an example), ruff style.
//!
//! The strings (`toolgate::schema::type`) are part of the public interface: CI scripts and
//! SARIF consumers key on them, so they never change once released. All stages (syntax,
//! schema, model, semantic checks, batch files, policy tests) draw their codes from here.

use std::fmt;
use std::str::FromStr;

/// A diagnostic code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// `toolgate::io::read`
    IoRead,
    /// `toolgate::io::not_found`
    IoNotFound,
    /// `toolgate::syntax::yaml`
    SyntaxYaml,
    /// `toolgate::syntax::toml`
    SyntaxToml,
    /// `toolgate::syntax::duplicate_key`
    SyntaxDuplicateKey,
    /// `toolgate::syntax::encoding`
    SyntaxEncoding,
    /// `toolgate::syntax::empty`
    SyntaxEmpty,
    /// `toolgate::syntax::too_large`
    SyntaxTooLarge,
    /// `toolgate::syntax::unsupported`
    SyntaxUnsupported,
    /// `toolgate::syntax::limit`
    SyntaxLimit,
    /// `toolgate::schema::type`
    SchemaType,
    /// `toolgate::schema::required`
    SchemaRequired,
    /// `toolgate::schema::unknown_key`
    SchemaUnknownKey,
    /// `toolgate::schema::enum`
    SchemaEnum,
    /// `toolgate::schema::format`
    SchemaFormat,
    /// `toolgate::schema::range`
    SchemaRange,
    /// `toolgate::schema::pattern`
    SchemaPattern,
    /// `toolgate::schema::version`
    SchemaVersion,
    /// `toolgate::schema::invalid`
    SchemaInvalid,
    /// `toolgate::model::deserialize`
    ModelDeserialize,
    /// `toolgate::semantic::duplicate_name`
    SemanticDuplicateName,
    /// `toolgate::semantic::alias_conflict`
    SemanticAliasConflict,
    /// `toolgate::semantic::unknown_reference`
    SemanticUnknownReference,
    /// `toolgate::semantic::timeout_range`
    SemanticTimeoutRange,
    /// `toolgate::semantic::contradiction`
    SemanticContradiction,
    /// `toolgate::semantic::invalid_glob`
    SemanticInvalidGlob,
    /// `toolgate::semantic::invalid_regex`
    SemanticInvalidRegex,
    /// `toolgate::semantic::invalid_shell_pattern`
    SemanticInvalidShellPattern,
    /// `toolgate::semantic::invalid_pointer`
    SemanticInvalidPointer,
    /// `toolgate::semantic::invalid_schema`
    SemanticInvalidSchema,
    /// `toolgate::semantic::empty_matcher`
    SemanticEmptyMatcher,
    /// `toolgate::semantic::unknown_field`
    SemanticUnknownField,
    /// `toolgate::semantic::rule_never_matches` (warning)
    SemanticRuleNeverMatches,
    /// `toolgate::semantic::rule_shadowed` (warning)
    SemanticRuleShadowed,
    /// `toolgate::semantic::rule_replaced` (warning)
    SemanticRuleReplaced,
    /// `toolgate::semantic::loose_pattern` (warning)
    SemanticLoosePattern,
    /// `toolgate::semantic::budget_ineffective` (warning)
    SemanticBudgetIneffective,
    /// `toolgate::semantic::exempt_unbounded` (warning)
    SemanticExemptUnbounded,
    /// `toolgate::semantic::example_failed`
    SemanticExampleFailed,
    /// `toolgate::semantic::locked_field`
    SemanticLockedField,
    /// `toolgate::semantic::invalid_lock`
    SemanticInvalidLock,
    /// `toolgate::semantic::invalid_template`
    SemanticInvalidTemplate,
    /// `toolgate::semantic::incomplete_engine`
    SemanticIncompleteEngine,
    /// `toolgate::semantic::untrusted_hint` (warning)
    SemanticUntrustedHint,
    /// `toolgate::semantic::invalid_argv`
    SemanticInvalidArgv,
    /// `toolgate::semantic::missing_executable` (warning)
    SemanticMissingExecutable,
    /// `toolgate::semantic::hook_runs_workspace_code` (warning)
    SemanticHookRunsWorkspaceCode,
    /// `toolgate::semantic::input_in_script`
    SemanticInputInScript,
    /// `toolgate::semantic::invalid_env_name`
    SemanticInvalidEnvName,
    /// `toolgate::batch::invalid`
    BatchInvalid,
    /// `toolgate::batch::duplicate_call_id`
    BatchDuplicateCallId,
    /// `toolgate::batch::unknown_mode`
    BatchUnknownMode,
    /// `toolgate::batch::empty`
    BatchEmpty,
    /// `toolgate::test::failed`
    TestFailed,
    /// `toolgate::trust::untrusted_project` (warning)
    TrustUntrustedProject,
}

/// The documentation of one code.
struct Info {
    name: &'static str,
    severity: Severity,
    summary: &'static str,
    docs: &'static str,
}

const fn error(name: &'static str, summary: &'static str, docs: &'static str) -> Info {
    Info {
        name,
        severity: Severity::Error,
        summary,
        docs,
    }
}

const fn warning(name: &'static str, summary: &'static str, docs: &'static str) -> Info {
    Info {
        name,
        severity: Severity::Warning,
        summary,
        docs,
    }
}

impl Code {
    /// Every code, in documentation order.
    pub const ALL: &'static [Code] = &[
        Code::IoRead,
        Code::IoNotFound,
        Code::SyntaxYaml,
        Code::SyntaxToml,
        Code::SyntaxDuplicateKey,
        Code::SyntaxEncoding,
        Code::SyntaxEmpty,
        Code::SyntaxTooLarge,
        Code::SyntaxUnsupported,
        Code::SyntaxLimit,
        Code::SchemaType,
        Code::SchemaRequired,
        Code::SchemaUnknownKey,
        Code::SchemaEnum,
        Code::SchemaFormat,
        Code::SchemaRange,
        Code::SchemaPattern,
        Code::SchemaVersion,
        Code::SchemaInvalid,
        Code::ModelDeserialize,
        Code::SemanticDuplicateName,
        Code::SemanticAliasConflict,
        Code::SemanticUnknownReference,
        Code::SemanticTimeoutRange,
        Code::SemanticContradiction,
        Code::SemanticInvalidGlob,
        Code::SemanticInvalidRegex,
        Code::SemanticInvalidShellPattern,
        Code::SemanticInvalidPointer,
        Code::SemanticInvalidSchema,
        Code::SemanticEmptyMatcher,
        Code::SemanticUnknownField,
        Code::SemanticRuleNeverMatches,
        Code::SemanticRuleShadowed,
        Code::SemanticRuleReplaced,
        Code::SemanticLoosePattern,
        Code::SemanticBudgetIneffective,
        Code::SemanticExemptUnbounded,
        Code::SemanticExampleFailed,
        Code::SemanticLockedField,
        Code::SemanticInvalidLock,
        Code::SemanticInvalidTemplate,
        Code::SemanticIncompleteEngine,
        Code::SemanticUntrustedHint,
        Code::SemanticInvalidArgv,
        Code::SemanticMissingExecutable,
        Code::SemanticHookRunsWorkspaceCode,
        Code::SemanticInputInScript,
        Code::SemanticInvalidEnvName,
        Code::BatchInvalid,
        Code::BatchDuplicateCallId,
        Code::BatchUnknownMode,
        Code::BatchEmpty,
        Code::TestFailed,
        Code::TrustUntrustedProject,
    ];

    /// The stable string, e.g. `toolgate::schema::type`.
    pub fn as_str(self) -> &'static str {
        self.info().name
    }

    /// The severity a diagnostic with this code has unless promoted (`--deny-warnings`).
    pub fn default_severity(self) -> Severity {
        self.info().severity
    }

    /// One line saying what the code reports (used as the SARIF rule's short description).
    pub fn summary(self) -> &'static str {
        self.info().summary
    }

    /// Markdown documentation: what it means, why it matters, and an example.
    pub fn docs(self) -> &'static str {
        self.info().docs
    }

    fn info(self) -> Info {
        match self {
            Code::IoRead => error(
                "toolgate::io::read",
                "a policy file could not be read",
                "## What it means\nThe file exists but could not be read: permission denied, it \
                 is a directory, or the operating system reported another error.\n\n## Why\n\
                 toolgate refuses to run with part of its policy missing: a rule that was meant \
                 to deny something would silently not apply.\n\n## Example\n```text\n\
                 toolgate check -p policies/secret.yaml   # mode 000\n```\nMake the file \
                 readable, or remove it from the policy roots.",
            ),
            Code::IoNotFound => error(
                "toolgate::io::not_found",
                "a policy file or root does not exist",
                "## What it means\nA path given as a policy root or file does not exist.\n\n\
                 ## Why\nA typo in a path would otherwise drop a whole layer of policy without \
                 a word.\n\n## Example\n```text\ntoolgate check -p polices/\n```\nCheck the \
                 spelling, or create the file with `toolgate init`.",
            ),
            Code::SyntaxYaml => error(
                "toolgate::syntax::yaml",
                "the file is not valid YAML",
                "## What it means\nThe YAML parser stopped at the position shown: an \
                 unclosed bracket or quote, a bad indentation, a `key: value` where a value \
                 was already given, or similar.\n\n## Why\nNothing in a file that does not \
                 parse can be trusted, so the whole file is rejected.\n\n## Example\n```yaml\n\
                 tools:\n  Bash:\n    aliases: [shell\n```\nClose the flow sequence: \
                 `aliases: [shell]`.",
            ),
            Code::SyntaxToml => error(
                "toolgate::syntax::toml",
                "the file is not valid TOML",
                "## What it means\nThe TOML parser rejected the file at the position shown: \
                 an unquoted string, a missing `=`, an unclosed array, an integer out of \
                 range, or similar.\n\n## Why\nNothing in a file that does not parse can be \
                 trusted, so the whole file is rejected.\n\n## Example\n```toml\n[tools.Bash]\n\
                 permission = { default = ask }\n```\nQuote the string: `default = \"ask\"`.",
            ),
            Code::SyntaxDuplicateKey => error(
                "toolgate::syntax::duplicate_key",
                "a key appears twice in the same mapping or table",
                "## What it means\nThe same key is written twice in one mapping (YAML) or \
                 table (TOML). The diagnostic points at the second one and shows the first.\n\n\
                 ## Why\nParsers disagree on which value wins; toolgate refuses to guess, \
                 because the ignored value might be the stricter one.\n\n## Example\n```yaml\n\
                 timeout:\n  max: 10m\n  max: 1m\n```\nKeep one `max`.",
            ),
            Code::SyntaxEncoding => error(
                "toolgate::syntax::encoding",
                "the file is not valid UTF-8",
                "## What it means\nThe file contains bytes that are not UTF-8, at the position \
                 shown (the first invalid byte).\n\n## Why\nPolicy files are text; a file in \
                 another encoding (or a binary file) would be misread.\n\n## Example\nA file \
                 saved as Latin-1 containing `é`. Save it as UTF-8.",
            ),
            Code::SyntaxEmpty => error(
                "toolgate::syntax::empty",
                "the file is empty or holds only comments",
                "## What it means\nThe file has no content: it is empty, holds only comments, \
                 or is a bare `---`.\n\n## Why\nEvery policy file must at least say which \
                 format version it is written for; an empty file is usually a mistake (a \
                 truncated write, a wrong path).\n\n## Example\n```yaml\n# todo\n```\nAdd \
                 `version: 1`, or delete the file.",
            ),
            Code::SyntaxTooLarge => error(
                "toolgate::syntax::too_large",
                "the file is larger than the size limit",
                "## What it means\nThe file is larger than the configured read limit (8 MiB \
                 by default) and was not parsed.\n\n## Why\nA policy file that large is almost \
                 certainly not a policy file (a log or data file in a policy directory), and \
                 parsing it would waste memory on every reload.\n\n## Example\nA 40 MB \
                 `dump.yaml` left in `policies/`. Move it elsewhere, or split a genuinely large \
                 policy into several files.",
            ),
            Code::SyntaxUnsupported => error(
                "toolgate::syntax::unsupported",
                "the file uses a construct toolgate does not accept",
                "## What it means\nThe file is well-formed but uses something policy files \
                 cannot hold: several YAML documents in one file, a custom tag (`!foo`), a \
                 collection or null as a mapping key, a merge key (`<<`), `.nan` or `.inf`, \
                 an integer that does not fit in 64 bits, or an unknown file extension.\n\n\
                 ## Why\nPolicies are plain JSON-like data, so that YAML and TOML load to the \
                 same thing and JSON Schema can check them.\n\n## Example\n```yaml\nversion: 1\n\
                 ---\nversion: 1\n```\nPut the second document in its own file.\n\nA plain \
                 scalar used as a key is read as its text: `1: x` has the key `\"1\"`, \
                 `true: x` the key `\"true\"`.",
            ),
            Code::SyntaxLimit => error(
                "toolgate::syntax::limit",
                "the document exceeds a structural limit",
                "## What it means\nThe document nests deeper than the nesting limit (128 \
                 levels), its aliases expand to more nodes than the alias budget allows, or a \
                 line of YAML is longer than 256 KiB.\n\n\
                 ## Why\nThese limits stop a hostile or broken file (a \"billion laughs\" alias \
                 bomb, thousands of nested brackets) from exhausting memory or the stack, and \
                 a megabyte-long line of YAML from taking seconds to parse (the parser's time on \
                 a flow collection grows with the square of its line's length).\n\n\
                 ## Example\n```yaml\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, \
                 *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n# ...\n```\n\
                 Write the data out, or flatten it.",
            ),
            Code::SchemaType => error(
                "toolgate::schema::type",
                "a value has the wrong type",
                "## What it means\nA value is not of the type the schema expects at that \
                 place: a string where a number is expected, a single string where a list is \
                 expected, and so on.\n\n## Why\nA value of the wrong type cannot mean what \
                 its author intended.\n\n## Example\n```yaml\ntools:\n  Bash:\n    aliases: \
                 shell\n```\nWrite a list: `aliases: [shell]`.",
            ),
            Code::SchemaRequired => error(
                "toolgate::schema::required",
                "a required key is missing",
                "## What it means\nA mapping lacks a key the schema requires; the diagnostic \
                 points at the mapping.\n\n## Why\nWithout it the entry is incomplete: a rule \
                 without a `decision`, a handler without its `kind`.\n\n## Example\n```yaml\n\
                 rules:\n  - name: git\n    tools: [Bash]\n```\nAdd `decision: allow` (or \
                 `ask`, `deny`).",
            ),
            Code::SchemaUnknownKey => error(
                "toolgate::schema::unknown_key",
                "a key is not allowed at this place",
                "## What it means\nA mapping has a key the schema does not define there. The \
                 help suggests the closest allowed key, or lists them all.\n\n## Why\nA \
                 misspelt key would otherwise be ignored, and the setting silently not \
                 applied (`timout: 10s` leaving the default timeout in force).\n\n## Example\n\
                 ```yaml\ntools:\n  Bash:\n    timout: { max: 10m }\n```\nWrite `timeout`.",
            ),
            Code::SchemaEnum => error(
                "toolgate::schema::enum",
                "a value is not one of the allowed values",
                "## What it means\nThe value must be one of a fixed set (or one constant), \
                 and is not. The help lists the allowed values.\n\n## Why\nAn unknown \
                 keyword has no meaning; guessing would be unsafe.\n\n## Example\n```yaml\n\
                 permission: { default: maybe }\n```\nWrite `allow`, `ask` or `deny`.",
            ),
            Code::SchemaFormat => error(
                "toolgate::schema::format",
                "a string is not in the expected format",
                "## What it means\nA string must follow a format, such as a duration (`30s`, \
                 `2m`) or a size (`30 KB`), and does not.\n\n## Why\nDurations and sizes \
                 without units are ambiguous (`30`: seconds or milliseconds?).\n\n## Example\n\
                 ```yaml\ntimeout: { max: 10 minutes }\n```\nWrite `10m`.",
            ),
            Code::SchemaRange => error(
                "toolgate::schema::range",
                "a value is out of range or has the wrong length",
                "## What it means\nA number is below its minimum or above its maximum, or a \
                 string, list or mapping is shorter or longer than allowed.\n\n## Why\nValues \
                 outside the range are meaningless (zero concurrency) or dangerous.\n\n\
                 ## Example\n```yaml\nengine:\n  max_concurrency: 0\n```\nUse at least `1`.",
            ),
            Code::SchemaPattern => error(
                "toolgate::schema::pattern",
                "a string or key does not match the required pattern",
                "## What it means\nA string (or a mapping key, such as a tool name) must \
                 match a regular expression and does not.\n\n## Why\nNames are used in rules, \
                 events and file names; odd characters would break them.\n\n## Example\n\
                 ```yaml\ntools:\n  \"my tool\": {}\n```\nUse a name without spaces: \
                 `my_tool`.",
            ),
            Code::SchemaVersion => error(
                "toolgate::schema::version",
                "the format version is missing or not supported",
                "## What it means\nEvery policy file starts with `version: 1`. This file has \
                 no `version`, or a version this toolgate does not read.\n\n## Why\nThe \
                 version lets the file format evolve without older or newer toolgates \
                 misreading files.\n\n## Example\n```yaml\nversion: 2\n```\nWrite `version: \
                 1`, or upgrade toolgate.",
            ),
            Code::SchemaInvalid => error(
                "toolgate::schema::invalid",
                "a value violates the schema",
                "## What it means\nA value violates a schema rule not covered by a more \
                 specific code: duplicate items in a list that must be unique, a value that \
                 matches a forbidden shape, and so on.\n\n## Why\nSee the message for the \
                 rule that failed.\n\n## Example\n```yaml\naliases: [sh, sh]\n```\nRemove \
                 the duplicate.",
            ),
            Code::ModelDeserialize => error(
                "toolgate::model::deserialize",
                "a value passed the schema but could not be read into the model",
                "## What it means\nThe file passed JSON Schema validation, but converting a \
                 value into toolgate's typed model failed (for example a number too large \
                 for its field).\n\n## Why\nThe schema and the model are generated from the \
                 same code; this error usually means a value at the edge of what the schema \
                 can express.\n\n## Example\n```yaml\nengine:\n  max_concurrency: \
                 99999999999\n```\nUse a smaller value.",
            ),
            Code::SemanticDuplicateName => error(
                "toolgate::semantic::duplicate_name",
                "a tool, rule, gate or mode is defined twice in one layer",
                "## What it means\nTwo files of the same policy root define the same tool, \
                 rule name, gate or mode. Both places are shown.\n\n## Why\nWithin a layer \
                 there is no order that could decide which definition wins; later layers \
                 override earlier ones on purpose, but a duplicate inside one layer is a \
                 mistake.\n\n## Example\n`policies/a.yaml` and `policies/b.yaml` both define \
                 `tools.Bash`. Merge them, or move one to another layer.",
            ),
            Code::SemanticAliasConflict => error(
                "toolgate::semantic::alias_conflict",
                "an alias is used twice or shadows a tool name",
                "## What it means\nAn alias is claimed by two tools, or equals the name of \
                 another tool.\n\n## Why\nAliases are resolved before anything else; an \
                 ambiguous alias would send calls to the wrong tool.\n\n## Example\n```yaml\n\
                 tools:\n  Bash: { aliases: [Shell] }\n  Shell: {}\n```\nDrop the alias or \
                 rename the tool.",
            ),
            Code::SemanticUnknownReference => error(
                "toolgate::semantic::unknown_reference",
                "a name refers to a tool, gate, mode or hook that does not exist",
                "## What it means\nA rule, contract or hook names a tool, gate, mode or hook \
                 that no file defines. The help suggests a close name when there is one.\n\n\
                 ## Why\nA rule for a misspelt tool never applies; a contract naming a \
                 missing gate could never run.\n\n## Example\n```yaml\nrules:\n  - name: r\n    \
                 tools: [Bsh]\n    decision: deny\n```\nWrite `Bash`.",
            ),
            Code::SemanticTimeoutRange => error(
                "toolgate::semantic::timeout_range",
                "a timeout's default is larger than its maximum",
                "## What it means\nA contract's `timeout.default` exceeds its \
                 `timeout.max` (or the values are otherwise inconsistent).\n\n## Why\nThe \
                 default would always be capped, so it cannot mean what it says.\n\n\
                 ## Example\n```yaml\ntimeout: { default: 10m, max: 2m }\n```\nLower the \
                 default or raise the maximum.",
            ),
            Code::SemanticContradiction => error(
                "toolgate::semantic::contradiction",
                "two settings of a contract contradict each other",
                "## What it means\nA contract combines flags that cannot both hold, such as \
                 `destructive: true` with `concurrent_safe: true`.\n\n## Why\nThe scheduler \
                 would have to ignore one of them; toolgate makes you choose.\n\n\
                 ## Example\n```yaml\nconcurrency: { destructive: true, concurrent_safe: true \
                 }\n```\nDrop `concurrent_safe`.",
            ),
            Code::SemanticInvalidGlob => error(
                "toolgate::semantic::invalid_glob",
                "a glob pattern does not compile",
                "## What it means\nA glob in a rule (tool names, `glob` or `path` matchers) \
                 is malformed, such as an unclosed `[` or `{`.\n\n## Why\nA pattern that \
                 cannot compile cannot match; a deny rule built on it would never fire.\n\n\
                 ## Example\n```yaml\nfile_path: { path: [\"src/{a,b\"] }\n```\nClose the \
                 brace: `src/{a,b}`.",
            ),
            Code::SemanticInvalidRegex => error(
                "toolgate::semantic::invalid_regex",
                "a regular expression does not compile",
                "## What it means\nA `regex` matcher (or a pattern in a schema) is not a valid \
                 regular expression.\n\n## Why\nA pattern that cannot compile cannot match.\n\n\
                 ## Example\n```yaml\nurl: { regex: \"https://(a|b\" }\n```\nClose the group.",
            ),
            Code::SemanticInvalidShellPattern => error(
                "toolgate::semantic::invalid_shell_pattern",
                "a shell matcher pattern cannot be parsed",
                "## What it means\nA `shell` matcher pattern is not a simple command of \
                 tokens and `*` wildcards (it contains operators, redirections or unbalanced \
                 quotes).\n\n## Why\nShell matchers compare every simple command a line \
                 would run against token patterns; a pattern with `&&` in it could never \
                 match one simple command.\n\n## Example\n```yaml\ncommand: { shell: [\"git \
                 add . && git commit *\"] }\n```\nWrite two patterns: `git add .` and `git \
                 commit *`.",
            ),
            Code::SemanticInvalidPointer => error(
                "toolgate::semantic::invalid_pointer",
                "a JSON pointer is malformed",
                "## What it means\nA matcher key or field reference written as a JSON pointer \
                 (`/a/b`) is not valid RFC 6901 (for example `~2`).\n\n## Why\nA malformed \
                 pointer names no field, so the matcher would never see a value.\n\n\
                 ## Example\n```yaml\nmatch:\n  \"/options/~x\": { exists: true }\n```\nEscape \
                 `~` as `~0` and `/` as `~1`.",
            ),
            Code::SemanticInvalidSchema => error(
                "toolgate::semantic::invalid_schema",
                "an input or output schema is not a valid JSON Schema",
                "## What it means\nA contract's `input_schema` or `output_schema` does not \
                 compile as JSON Schema (draft 2020-12).\n\n## Why\nCalls are validated \
                 against it; a broken schema would reject every call or none.\n\n## Example\n\
                 ```yaml\ninput_schema: { type: strng }\n```\nWrite `type: string`.",
            ),
            Code::SemanticEmptyMatcher => error(
                "toolgate::semantic::empty_matcher",
                "an argument matcher holds for every call",
                "## What it means\nA rule's `match` sets no condition on some argument: an empty \
                 pattern list (`shell: []`, `glob: []`, `regex: []`, `reaches: []`, `path: []`), an empty \
                 `match: {}`, or a selector whose matcher gives no condition at all \
                 (`file_path: {}`, or only `allow_redirection`).\n\n## Why\nA matcher without \
                 a condition holds for every call, so an allow rule written this way allows \
                 every call of its tools, whatever the author meant to limit it to.\n\n\
                 ## Example\n```yaml\n- name: git-only\n  tools: [Bash]\n  match:\n    \
                 command: { shell: [] }\n  decision: allow\n```\nList the commands \
                 (`shell: [\"git status\"]`), or remove `match` if the rule is really meant for \
                 every call.",
            ),
            Code::SemanticUnknownField => error(
                "toolgate::semantic::unknown_field",
                "a matcher names a field the tool's input schema does not define",
                "## What it means\nA selector in a rule's `match` (a field name or a JSON \
                 pointer such as `/options/path`) names a place the input schema of a tool the \
                 rule covers does not define. An error when every covered tool's schema rules \
                 the field out (`additionalProperties: false`, or a parent that is never an \
                 object); a warning when a schema leaves other fields open, a tool has no input \
                 schema, or only some of the tools the rule names define the field (tools \
                 reached only through a glob such as `*` may lack it).\n\n## Why\nA \
                 selector that never resolves never sees a value: a deny rule on a misspelt \
                 field never fires, and the call it was written for goes through.\n\n\
                 ## Example\n```yaml\n- name: no-rm\n  tools: [Bash]\n  match:\n    \
                 comand: { shell: [\"rm *\"] }\n  decision: deny\n```\nWrite `command`. For a \
                 rule over several tools, narrow `tools` to those that have the field or write \
                 one rule per tool.",
            ),
            Code::SemanticRuleNeverMatches => warning(
                "toolgate::semantic::rule_never_matches",
                "a rule can never match",
                "## What it means\nNo call can satisfy the rule: it names only tools that do \
                 not exist in the set, lists no mode (`modes: []`), requires flags no such tool \
                 has in any mode, or its `match` can never \
                 hold on a field the tools' input schemas define (`equals` a value of another \
                 type or outside the field's `enum`, `exists: false` on a required field, \
                 `glob`, `regex`, `path` or `shell` on a field that is never a string). Inputs \
                 are validated against the schema before rules are consulted, so such a value \
                 never reaches the rule.\n\n## Why\nA rule that never matches is dead \
                 policy: its author expected it to do something.\n\n## Example\n```yaml\n\
                 - name: r\n  tools: [Read]\n  when: { destructive: true }\n  decision: ask\n\
                 ```\n`Read` is not destructive. Fix the condition or delete the rule.",
            ),
            Code::SemanticRuleShadowed => warning(
                "toolgate::semantic::rule_shadowed",
                "a rule is fully shadowed by a higher-priority rule",
                "## What it means\nEvery call the rule matches is also matched by another \
                 rule that takes precedence, so its decision is never used.\n\n## Why\nThe \
                 shadowed rule is dead policy, and often a sign that priorities are the \
                 wrong way round.\n\n## Example\n```yaml\n- { name: all, tools: [\"*\"], \
                 decision: deny, priority: 10 }\n- { name: git, tools: [Bash], decision: \
                 allow }\n```\nRaise the priority of `git` or narrow `all`.",
            ),
            Code::SemanticRuleReplaced => warning(
                "toolgate::semantic::rule_replaced",
                "a rule's match replaces the match of a deny or ask rule of a lower layer",
                "## What it means\nRules are matched by `name` across layers, and a rule's \
                 `match` is replaced whole: a later layer that writes a rule under the name \
                 of a lower layer's deny or ask rule (a built-in one such as `no-secrets`) \
                 with a `match` of its own takes that rule's place, and what the lower rule \
                 matched is no longer denied or asked by it.\n\n## Why\nA rule written to \
                 add to the protections under a name that happens to be taken removes them \
                 instead, and nothing else says so.\n\n## Example\n```yaml\n- name: \
                 no-secrets\n  tools: [Read]\n  match: { file_path: { path: \
                 [\"/**/prod.env\"] } }\n  decision: deny\n```\nGive the rule a name of its \
                 own to add it. To replace the lower rule on purpose, switch it off \
                 (`disabled: true` under its name) and write yours under a new name.",
            ),
            Code::SemanticLoosePattern => warning(
                "toolgate::semantic::loose_pattern",
                "a pattern compares spelling where the meaning differs",
                "## What it means\nA `glob` or `regex` (or `equals`, for paths) compares the \
                 text of a field that names a file (`file_path`, `path`, `*_path`), a web \
                 address (`url`, `*_url`) or a command line (`command`), not the place or the \
                 commands it names. For paths: `src/**` matches `src/../../etc/passwd` \
                 and misses `./src/x`; `*.md` matches `/etc/x.md`. For URLs: a wildcard in \
                 the host (`https://docs.rs*`) also matches `https://docs.rs.evil.example/` and \
                 `https://docs.rs@10.0.0.1/`, whose host is another. For command lines (a \
                 `glob`, or a `regex` in an allow rule or anchored with `^`: an unanchored \
                 one in a deny rule is a net anywhere in the line): `^curl ` misses `true; curl x`, `\\curl x` and `/usr/bin/curl x`. A `path` \
                 pattern names less than it seems to when it ends with `/` (the folder, not \
                 its files: write `dir/**`), has white space at an end, starts with `~user` \
                 or holds a variable other than a leading `$HOME` (neither is expanded), or \
                 holds a backslash that escapes nothing (a Windows separator).\n\n## Why\nAn \
                 allow rule written so allows calls outside what it names, and a deny rule \
                 misses other spellings of the same file or command.\n\n## Example\n```yaml\n- name: docs\n  \
                 tools: [Write]\n  match:\n    file_path: { glob: \"docs/**\" }\n  decision: \
                 allow\n```\nMatch the location with `path: [\"docs/**\"]` (anchored at the \
                 workspace, `..` and links resolved), or `workspace: inside`. For a URL, end \
                 the host with `/` (`https://docs.rs/*`).",
            ),
            Code::SemanticBudgetIneffective => warning(
                "toolgate::semantic::budget_ineffective",
                "a smaller budget limit makes another one ineffective",
                "## What it means\nA contract's `budget.max_inline` is smaller than \
                 `budget.max_model` (or the other way round), so the larger limit can never \
                 apply.\n\n## Why\nThe effective limit is the smaller one; a declared budget \
                 silently reduced is a known trap.\n\n## Example\n```yaml\nbudget: { \
                 max_model: 30000, max_inline: 5000 }\n```\nRemove one limit or make them \
                 agree.",
            ),
            Code::SemanticExemptUnbounded => warning(
                "toolgate::semantic::exempt_unbounded",
                "a batch-exempt tool has no size limit of its own",
                "## What it means\nA contract sets `budget.batch_exempt: true` but no \
                 `max_model` or `max_inline`, so its output reaches the model unshortened, \
                 whatever its size.\n\n## Why\nExempt outputs are not shortened by the batch \
                 finalizer; without a limit one call can fill the context window.\n\n\
                 ## Example\n```yaml\nbudget: { batch_exempt: true }\n```\nAdd `max_model: \
                 20000`.",
            ),
            Code::SemanticExampleFailed => error(
                "toolgate::semantic::example_failed",
                "a rule's example call does not behave as declared",
                "## What it means\nA call listed under a rule's `examples.match` does not \
                 match the rule, or one under `examples.not_match` does.\n\n## Why\nExamples \
                 pin what a rule is meant to do; when an edit changes that, the load fails \
                 with the example that broke.\n\n## Example\n```yaml\nmatch:\n  file_path: { \
                 path: [\"**/.env\"] }\nexamples:\n  match: [{ tool: Read, input: { \
                 file_path: \"app/.envrc\" } }]\n```\nFix the example or the matcher.",
            ),
            Code::SemanticLockedField => error(
                "toolgate::semantic::locked_field",
                "a layer changes a field an enforced layer locked",
                "## What it means\nAn enforced layer lists a contract field under `locked`, \
                 and a later layer sets it; or, while an enforced layer is loaded, a later \
                 layer changes or disables an agent tool mapping (`agents.claude.tools.Bash`) \
                 or a command table entry (`commands.programs.cat`) the enforced layer or a \
                 layer below it set. Both places are shown.\n\n\
                 ## Why\nOrganisation \
                 policy must not be weakened by project or local files.\n\n## Example\nThe \
                 org layer locks `timeout.max`; `project/tools.yaml` sets `timeout: { max: \
                 1h }`. Remove the override.",
            ),
            Code::SemanticInvalidLock => error(
                "toolgate::semantic::invalid_lock",
                "a `locked` entry names no contract field",
                "## What it means\nAn entry in a contract's `locked` list is not the dotted \
                 path of a contract field (`timeout.max`, `permission.always_ask`).\n\n\
                 ## Why\nA lock on a misspelt field locks nothing.\n\n## Example\n```yaml\n\
                 locked: [timeout.maximum]\n```\nWrite `timeout.max`.",
            ),
            Code::SemanticInvalidTemplate => error(
                "toolgate::semantic::invalid_template",
                "a handler template is malformed or names an unknown field",
                "## What it means\nA `{{...}}` placeholder in a command handler's `argv` (or \
                 another template) is unclosed, or names an input field the input schema \
                 does not declare.\n\n## Why\nThe placeholder would expand to nothing, and \
                 the command would run with a missing argument.\n\n## Example\n```yaml\n\
                 argv: [bash, -c, \"{{input.comand}}\"]\n```\nWrite `{{input.command}}`.",
            ),
            Code::SemanticIncompleteEngine => error(
                "toolgate::semantic::incomplete_engine",
                "the merged engine configuration lacks a required setting",
                "## What it means\nAfter all layers are merged, a setting the engine needs \
                 has no value (normally the built-in layer provides every one).\n\n## Why\n\
                 This happens with `--no-builtin` when the remaining layers do not define the \
                 whole `engine` section.\n\n## Example\n`toolgate check --no-builtin -p \
                 policies/` where no file sets `engine.default_timeout`. Add it, or keep the \
                 built-in layer.",
            ),
            Code::SemanticUntrustedHint => warning(
                "toolgate::semantic::untrusted_hint",
                "a contract relies on a tool hint it contradicts",
                "## What it means\nAn MCP server's tool annotations (`readOnlyHint`, \
                 `destructiveHint`, ...) are untrusted defaults, and the contract's own flags \
                 contradict a hint it still relies on.\n\n## Why\nA server can claim anything \
                 about its tools; permission and scheduling must rest on what the contract \
                 declares.\n\n## Example\nA server marks `delete_repo` as `readOnlyHint: \
                 true`. Declare `concurrency: { read_only: false, destructive: true }` \
                 explicitly.",
            ),
            Code::SemanticInvalidArgv => error(
                "toolgate::semantic::invalid_argv",
                "a command line argument cannot be passed to a process",
                "## What it means\nAn element of a command handler's or hook's `argv` contains \
                 a NUL byte (`\\0`).\n\n## Why\nA process argument is a C string: it ends at \
                 the first NUL, so the command could never be started as written, and every \
                 call would fail at run time.\n\n## Example\n```yaml\n\
                 argv: [grep, \"a\\0b\"]\n```\nRemove the NUL byte.",
            ),
            Code::SemanticMissingExecutable => warning(
                "toolgate::semantic::missing_executable",
                "a handler or hook program is not found",
                "## What it means\nThe program of a command handler's or hook's `argv` (its \
                 first element) is not found: a path that does not exist (a relative path is \
                 taken from the workspace, or the handler's `cwd`), or a bare name on no \
                 folder of the `PATH` the process gets.\n\n## Why\nEvery call of the tool \
                 (or every run of the hook) would fail with \"command not found\". A warning, \
                 not an error: the program may be installed where the policies are used but \
                 not where they are checked.\n\n## Example\n```yaml\n\
                 argv: [rgrep, \"{{input.pattern}}\"]\n```\nInstall the program, or name it by \
                 an absolute path.",
            ),
            Code::SemanticHookRunsWorkspaceCode => warning(
                "toolgate::semantic::hook_runs_workspace_code",
                "a hook runs code it takes from the workspace",
                "## What it means\nA hook's `command` builds or loads the program it runs from \
                 the workspace the agent edits: `cargo run`, `go run`, `npm run`, `npx`, `uv \
                 run`, `python3 -m` (which puts the workspace root first on the import \
                 path).\n\n## Why\nA hook's answer is a decision. toolgate keeps the agent \
                 from writing the files such a hook names and its build files (`Cargo.toml`, \
                 `package.json`, makefiles), but not every source file the program is built \
                 from or every module it imports: an edit the agent may make changes what the \
                 hook answers.\n\n## Example\n```yaml\nhooks:\n  - name: gate\n    \
                 event: PreToolUse\n    command: [cargo, run, -q, --bin, gate]\n```\nBuild \
                 the hook once and run the binary, kept outside the workspace or in a folder \
                 of its own (which is protected as a whole); for Python, `python3 -I \
                 tools/gate.py`.",
            ),
            Code::SemanticInputInScript => error(
                "toolgate::semantic::input_in_script",
                "an input placeholder shares an argument a program may read as code",
                "## What it means\nA command handler's `argv` runs a program that reads an \
                 argument as code — a shell (also through `env`, `busybox`), an interpreter \
                 (`python3 -c`, `node -e`, `perl -ne`), `awk`, `sed`, `jq`, `ssh` — and an \
                 `{{input.…}}` placeholder shares an argument after it with other text, other \
                 than glued after an option's or a variable's name or a plain folder path \
                 (`--target={{input.t}}`, `q={{input.q}}`, `out/{{input.f}}`) outside the \
                 script itself.\n\n\
                 ## Why\nThe value becomes code: a quote in it ends the string the script \
                 meant, and what follows runs (`x' /dev/null; rm -rf ~; echo '`). No rule \
                 judged it as code, only as the field's value.\n\n## Example\n```yaml\n\
                 argv: [bash, -c, \"grep -rn -- '{{input.q}}' src\"]\n```\nPass the value as \
                 a positional parameter, which the script reads as data: `argv: [bash, -c, \
                 'grep -rn -- \"$1\" src', grep, \"{{input.q}}\"]`. A script that is the \
                 placeholder alone (`[bash, -c, \"{{input.command}}\"]`) is a shell tool, judged \
                 by `shell` rules.",
            ),
            Code::SemanticInvalidEnvName => error(
                "toolgate::semantic::invalid_env_name",
                "an environment variable name cannot be set",
                "## What it means\nA key of a command handler's `set_env` is empty or holds \
                 `=` or a NUL byte.\n\n## Why\nNo process can be given such a variable: every \
                 call of the tool would fail when it starts.\n\n## Example\n```yaml\n\
                 set_env: { \"A=B\": x }\n```\nWrite the name alone, `A: B`.",
            ),
            Code::BatchInvalid => error(
                "toolgate::batch::invalid",
                "a batch file is malformed",
                "## What it means\nA batch file (for `plan` and `run`) is not of the shape \
                 `{modes: [...], calls: [{id, tool, input}, ...]}`.\n\n## Why\nThe batch \
                 cannot be scheduled.\n\n## Example\n```yaml\ncalls:\n  - tool: Read\n```\n\
                 Give the call an `id` and an `input`.",
            ),
            Code::BatchDuplicateCallId => error(
                "toolgate::batch::duplicate_call_id",
                "two calls in a batch have the same id",
                "## What it means\nCall ids must be unique within a batch.\n\n## Why\nResults \
                 and events are matched to calls by id.\n\n## Example\n```yaml\ncalls:\n  - { \
                 id: a, tool: Read, input: {} }\n  - { id: a, tool: Read, input: {} }\n```\n\
                 Rename one.",
            ),
            Code::BatchUnknownMode => error(
                "toolgate::batch::unknown_mode",
                "a batch names a mode no policy declares",
                "## What it means\nThe batch's `modes` list names a mode that is not \
                 declared under `modes` in the policy set.\n\n## Why\nA misspelt mode would \
                 silently disable the rules conditioned on it.\n\n## Example\n```yaml\n\
                 modes: [pln]\n```\nWrite `plan`.",
            ),
            Code::BatchEmpty => error(
                "toolgate::batch::empty",
                "a batch has no calls",
                "## What it means\nThe batch file has no calls.\n\n## Why\nThere is nothing \
                 to plan or run, which usually means the wrong file was passed.\n\n\
                 ## Example\n```yaml\ncalls: []\n```\nAdd calls.",
            ),
            Code::TestFailed => error(
                "toolgate::test::failed",
                "a policy test's expectation does not hold",
                "## What it means\nA call in a policy test file got a different decision, \
                 timeout, budget or group than the test expects.\n\n## Why\nPolicy tests pin \
                 the behaviour of a policy set across edits.\n\n## Example\n```yaml\n- call: \
                 { tool: Bash, input: { command: \"rm -rf /\" } }\n  expect: { decision: \
                 deny }\n```\nfails if a rule now allows it.",
            ),
            Code::TrustUntrustedProject => warning(
                "toolgate::trust::untrusted_project",
                "a project's policies are not trusted, so what could loosen them is ignored",
                "## What it means\nThe project's `.toolgate/policies` was found from the \
                 current directory, and the user has not trusted it (or its files changed \
                 since). Its deny and ask rules apply; its allow rules, hooks, tool \
                 contracts, `commands` table, engine settings and changes to other layers' \
                 rules are ignored. Each ignored entry is shown.\n\n## Why\nA cloned \
                 repository must not allow what the user's or organisation's layers deny, nor \
                 run its hooks, before someone has read it.\n\n## Example\nA repository \
                 ships a rule allowing `rm -rf *`. Review `.toolgate/policies`, then run \
                 `toolgate trust .`.",
            ),
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not a known diagnostic code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown diagnostic code `{0}`")]
pub struct UnknownCode(pub String);

impl FromStr for Code {
    type Err = UnknownCode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Code::ALL
            .iter()
            .copied()
            .find(|code| code.as_str() == s)
            .ok_or_else(|| UnknownCode(s.to_owned()))
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A lint: reported, but the load succeeds (unless warnings are denied).
    Warning,
    /// The load fails.
    Error,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn strings_are_unique_and_round_trip() {
        let mut seen = HashSet::new();
        for &code in Code::ALL {
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert!(code.as_str().starts_with("toolgate::"), "{code}");
            assert_eq!(code.as_str().parse::<Code>(), Ok(code));
        }
        assert_eq!(seen.len(), 55);
        assert!("toolgate::nope".parse::<Code>().is_err());
    }

    #[test]
    fn every_code_is_documented() {
        for &code in Code::ALL {
            let docs = code.docs();
            for section in ["## What it means", "## Why", "## Example"] {
                assert!(docs.contains(section), "{code} lacks {section}");
            }
            let summary = code.summary();
            assert!(!summary.ends_with('.'), "{code}");
            assert!(summary.starts_with(|c: char| c.is_lowercase()), "{code}");
        }
    }

    #[test]
    fn lints_are_warnings() {
        let warnings: Vec<_> = Code::ALL
            .iter()
            .filter(|code| code.default_severity() == Severity::Warning)
            .map(|code| code.as_str())
            .collect();
        assert_eq!(
            warnings,
            [
                "toolgate::semantic::rule_never_matches",
                "toolgate::semantic::rule_shadowed",
                "toolgate::semantic::rule_replaced",
                "toolgate::semantic::loose_pattern",
                "toolgate::semantic::budget_ineffective",
                "toolgate::semantic::exempt_unbounded",
                "toolgate::semantic::untrusted_hint",
                "toolgate::semantic::missing_executable",
                "toolgate::semantic::hook_runs_workspace_code",
                "toolgate::trust::untrusted_project",
            ]
        );
    }
}
