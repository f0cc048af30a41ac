//! Reading a decision log (JSON Lines, one record per decided call) back as calls to replay
//! under two policy sets. Only `tool`, `toolgate_tools` and `input` are read, so records of
//! older or newer versions replay too; a record whose call one toolgate tool decided replays
//! as a call of that tool, any other as the tool the caller named; a line that is not such a record is counted and skipped. A record
//! whose input was cut when it was logged (`{"truncated": …}`) is skipped as well: its real
//! input is unknown.

use serde_json::Value;

use super::decisions::{CorpusCall, Origin};

/// The calls of a log, and how many lines were skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replayed {
    /// The calls, in log order.
    pub calls: Vec<CorpusCall>,
    /// Lines that were not a replayable record (blank lines aside).
    pub skipped: usize,
}

/// Reads the text of a decision log.
pub fn read_log(text: &str) -> Replayed {
    let mut replayed = Replayed::default();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Option<Value> = serde_json::from_str(line).ok();
        let call = record.as_ref().and_then(|record| {
            let named = record.get("tool")?.as_str()?;
            let tool = match record.get("toolgate_tools").and_then(Value::as_array) {
                Some(tools) if tools.len() == 1 => tools[0].as_str().unwrap_or(named),
                Some(_) | None => named,
            };
            let input = record.get("input")?;
            if !input.is_object() || is_cut(input) {
                return None;
            }
            Some(CorpusCall {
                tool: tool.to_owned(),
                input: input.clone(),
                modes: Vec::new(),
                origin: Origin::Replay { line: index + 1 },
            })
        });
        match call {
            Some(call) => replayed.calls.push(call),
            None => replayed.skipped += 1,
        }
    }
    replayed
}

/// The log's marker for an input too large to record whole.
fn is_cut(input: &Value) -> bool {
    input.as_object().is_some_and(|map| {
        map.len() == 2 && map.contains_key("omitted_bytes") && map.contains_key("sha256")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_replay_with_unknown_fields_and_bad_lines_are_skipped() {
        let log = concat!(
            r#"{"version":1,"tool":"Read","input":{"file_path":"a.rs"},"decision":"allow","future":1}"#,
            "\n\n",
            "not json\n",
            r#"{"tool":"Bash"}"#,
            "\n",
            r#"{"tool":"run_shell_command","toolgate_tools":["Bash"],"input":{"command":"ls"}}"#,
            "\n",
        );
        let replayed = read_log(log);
        assert_eq!(replayed.skipped, 2);
        let calls: Vec<(&str, usize)> = replayed
            .calls
            .iter()
            .map(|c| {
                let Origin::Replay { line } = c.origin else {
                    return (c.tool.as_str(), 0);
                };
                (c.tool.as_str(), line)
            })
            .collect();
        assert_eq!(calls, [("Read", 1), ("Bash", 5)]);
    }
}
