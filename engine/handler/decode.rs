//! Streaming UTF-8 decoding of process output.
//!
//! Output arrives in arbitrary byte chunks; a multi-byte character may straddle two reads.
//! The decoder carries an incomplete trailing sequence over to the next chunk, so progress
//! chunks never split a character, and replaces invalid bytes with U+FFFD exactly as
//! [`String::from_utf8_lossy`] would on the whole stream.

/// Decodes a byte stream chunk by chunk into whole-character text.
#[derive(Clone, Debug, Default)]
pub struct Utf8Decoder {
    /// The start of a character whose remaining bytes have not arrived yet (at most 3 bytes).
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// A decoder with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the next chunk; an incomplete character at its end is held back.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(bytes);
        let mut out = String::with_capacity(data.len());
        let mut rest = data.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // `valid` is valid UTF-8 by the error's contract, so this never replaces.
                    out.push_str(&String::from_utf8_lossy(valid));
                    match error.error_len() {
                        Some(invalid) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = after.get(invalid..).unwrap_or_default();
                        }
                        None => {
                            // INVARIANT: an incomplete sequence is at most 3 bytes.
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }

    /// Ends the stream: an incomplete character left over becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let pending = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&pending).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn decode_in_chunks(bytes: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut decoder = Utf8Decoder::new();
        let mut chunks = Vec::new();
        let mut start = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        for cut in cuts {
            chunks.push(decoder.push(&bytes[start..cut]));
            start = cut;
        }
        chunks.push(decoder.push(&bytes[start..]));
        chunks.push(decoder.finish());
        chunks
    }

    #[test]
    fn a_character_split_across_reads_is_held_back() {
        let text = "é€😀";
        let bytes = text.as_bytes();
        let chunks = decode_in_chunks(bytes, &[1, 3, 5, 8]);
        assert_eq!(chunks, ["", "é", "€", "", "😀", ""]);
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let chunks = decode_in_chunks(b"a\xffb\xe2\x82", &[2]);
        assert_eq!(chunks.concat(), "a\u{fffd}b\u{fffd}");
        let chunks = decode_in_chunks(b"\xe2\x82A", &[2]);
        assert_eq!(chunks, ["", "\u{fffd}A", ""]);
    }

    proptest! {
        #[test]
        fn chunked_decoding_equals_lossy_decoding_of_the_whole(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            text in "\\PC{0,16}",
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let mut bytes = bytes;
            bytes.extend_from_slice(text.as_bytes());
            let chunks = decode_in_chunks(&bytes, &cuts);
            prop_assert_eq!(chunks.concat(), String::from_utf8_lossy(&bytes).into_owned());
        }

        #[test]
        fn valid_text_is_never_split_inside_a_character(
            text in "\\PC{0,32}",
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            // Every chunk is a `String`, so equality with the input means no character was
            // split (a split one would have come out as U+FFFD).
            let chunks = decode_in_chunks(text.as_bytes(), &cuts);
            prop_assert_eq!(chunks.concat(), text);
        }
    }
}
