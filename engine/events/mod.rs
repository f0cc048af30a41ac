//! Events streamed while a batch runs (SPEC §11), and the sinks that receive them.
//!
//! Every event carries the batch id, the call id where it concerns one call, the generation
//! of the snapshot the batch runs on, and a timestamp. The vocabulary of outcomes (status,
//! cancellation reasons, failure stages) lives here too, because events are where it is
//! reported; the pipeline produces it.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::model::{BatchId, CallId, Decision};

mod kinds;
pub use kinds::*;

/// One event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The batch it belongs to (absent for reload events).
    pub batch_id: Option<BatchId>,
    /// The call it concerns, if one.
    pub call_id: Option<CallId>,
    /// Generation of the snapshot in force.
    pub generation: u64,
    /// When it happened.
    pub timestamp: SystemTime,
    /// What happened.
    pub kind: EventKind,
}

impl Event {
    /// An event stamped now.
    pub fn now(
        batch_id: Option<BatchId>,
        call_id: Option<CallId>,
        generation: u64,
        kind: EventKind,
    ) -> Self {
        Self {
            batch_id,
            call_id,
            generation,
            timestamp: SystemTime::now(),
            kind,
        }
    }

    /// The `type` name of the event (`ToolCallStarted`, …).
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }

    /// Whether this is the terminal event of a call.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.kind,
            EventKind::ToolCallResult(_) | EventKind::ToolCallError(_)
        )
    }
}

impl Serialize for Event {
    /// `{"type": …, "batch_id": …, "call_id": …, "generation": …, "timestamp": …, <fields>}`
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = Map::new();
        map.insert("type".into(), Value::from(self.type_name()));
        if let Some(batch) = &self.batch_id {
            map.insert("batch_id".into(), Value::from(batch.as_str()));
        }
        if let Some(call) = &self.call_id {
            map.insert("call_id".into(), Value::from(call.as_str()));
        }
        map.insert("generation".into(), Value::from(self.generation));
        map.insert(
            "timestamp".into(),
            Value::from(humantime::format_rfc3339_millis(self.timestamp).to_string()),
        );
        match serde_json::to_value(&self.kind).map_err(serde::ser::Error::custom)? {
            Value::Object(fields) => {
                for (key, value) in fields {
                    if key != "type" {
                        map.insert(key, value);
                    }
                }
            }
            other => {
                map.insert("data".into(), other);
            }
        }
        map.serialize(serializer)
    }
}

/// Where events go. Implementations must be cheap and must not block: the engine calls
/// `emit` on its execution path.
pub trait EventSink: Send + Sync {
    /// Receives one event.
    fn emit(&self, event: Event);

    /// Whether this sink wants events at all. The engine skips building events (their
    /// strings, clones and timestamps) for a sink that says no.
    fn wants_events(&self) -> bool {
        true
    }
}

/// Drops every event.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&self, _event: Event) {}

    fn wants_events(&self) -> bool {
        false
    }
}

/// Keeps every event in memory (tests, `plan`-like tooling).
#[derive(Debug, Default)]
pub struct VecSink {
    events: Mutex<Vec<Event>>,
}

impl VecSink {
    /// A new, empty sink.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The events received so far.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .map(|events| events.clone())
            .unwrap_or_default()
    }
}

impl EventSink for VecSink {
    fn emit(&self, event: Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }
}

/// Sends events to an unbounded tokio channel (the CLI and the stdio server read from it).
#[derive(Clone, Debug)]
pub struct ChannelSink(pub tokio::sync::mpsc::UnboundedSender<Event>);

impl EventSink for ChannelSink {
    fn emit(&self, event: Event) {
        // A closed receiver means nobody listens any more; events are then dropped.
        let _ = self.0.send(event);
    }
}

impl<F: Fn(Event) + Send + Sync> EventSink for F {
    fn emit(&self, event: Event) {
        self(event)
    }
}

/// Fans one event out to several sinks.
#[derive(Clone, Default)]
pub struct Fanout(pub Vec<Arc<dyn EventSink>>);

impl EventSink for Fanout {
    fn emit(&self, event: Event) {
        if let Some((last, rest)) = self.0.split_last() {
            for sink in rest {
                sink.emit(event.clone());
            }
            last.emit(event);
        }
    }

    fn wants_events(&self) -> bool {
        self.0.iter().any(|sink| sink.wants_events())
    }
}

/// Decision as reported in events.
pub fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
    }
}
