//! A child's output read line by line on a thread of its own, so a test can wait for a line
//! with a timeout instead of blocking on the pipe.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{Receiver, channel};

/// The lines of `output`, as they arrive; the channel closes when the output ends.
pub fn lines(output: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    lines
}
