//! Value types with units as they are written in policy files: durations (`"500ms"`,
//! `"30s"`, `"2m"`, or `none` where a limit may be absent) and sizes (`30000`, `"30 KB"`,
//! `"50 MiB"`), plus the unit budgets are counted in.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::time::Duration as StdDuration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written with a unit: `"500ms"`, `"30s"`, `"2m"`, `"1h"`, `"1m 30s"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub StdDuration);

/// Why a duration or size string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The duration string could not be parsed.
    #[error("`{0}` is not a duration: write a number with a unit, like `500ms`, `30s`, `2m`")]
    Duration(String),
    /// The size string could not be parsed.
    #[error(
        "`{0}` is not a size: write an integer, or a number with a unit, like `30 KB`, `50 MiB`"
    )]
    Size(String),
    /// The size does not fit in 64 bits.
    #[error("`{0}` is too large: a size must be below 16 EiB")]
    SizeTooLarge(String),
}

/// The units a duration may be written in, as accepted by [`Duration::parse`].
const DURATION_UNITS: &[&str] = &["ms", "s", "m", "h"];

impl Duration {
    /// Builds a duration from milliseconds.
    #[cfg(test)]
    pub const fn from_millis(ms: u64) -> Self {
        Self(StdDuration::from_millis(ms))
    }

    /// The duration in whole milliseconds (saturating).
    pub fn as_millis(&self) -> u64 {
        u64::try_from(self.0.as_millis()).unwrap_or(u64::MAX)
    }

    /// Parses `"500ms"`, `"30s"`, `"2m"`, `"1h"` and sums like `"1m 30s"`.
    ///
    /// Only the units `ms`, `s`, `m` and `h` are accepted so that files stay readable and the
    /// schema can describe the format exactly.
    pub fn parse(text: &str) -> Result<Self, UnitError> {
        let err = || UnitError::Duration(text.to_owned());
        let mut rest = text.trim();
        if rest.is_empty() {
            return Err(err());
        }
        let mut total = StdDuration::ZERO;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(err());
            }
            let number: u64 = rest[..digits].parse().map_err(|_| err())?;
            rest = rest[digits..].trim_start();
            let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            let unit = &rest[..unit_len];
            if !DURATION_UNITS.contains(&unit) {
                return Err(err());
            }
            let part = match unit {
                "ms" => StdDuration::from_millis(number),
                "s" => StdDuration::from_secs(number),
                "m" => StdDuration::from_secs(number.checked_mul(60).ok_or_else(err)?),
                _ => StdDuration::from_secs(number.checked_mul(3600).ok_or_else(err)?),
            };
            total = total.checked_add(part).ok_or_else(err)?;
            rest = rest[unit_len..].trim_start();
        }
        Ok(Self(total))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.as_millis();
        if ms == 0 {
            f.write_str("0ms")
        } else if ms.is_multiple_of(3_600_000) {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(de::Error::custom)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "duration",
            "pattern": DURATION_PATTERN,
            "description": "A duration with a unit: `500ms`, `30s`, `2m`, `1h`, or a sum like `1m 30s`.",
            "examples": ["500ms", "30s", "2m"]
        })
    }
}

/// The regular expression the schema uses for durations (mirrors [`Duration::parse`]).
pub const DURATION_PATTERN: &str = r"^\s*([0-9]+\s*(ms|s|m|h)\s*)+$";

/// A limit that may be switched off with the word `none`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit<T> {
    /// `none`: no limit.
    None,
    /// A limit.
    Some(T),
}

impl<T> Limit<T> {
    /// Converts into an `Option`.
    pub fn into_option(self) -> Option<T> {
        match self {
            Limit::None => None,
            Limit::Some(value) => Some(value),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Limit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::None => f.write_str("none"),
            Limit::Some(value) => value.fmt(f),
        }
    }
}

impl<T: Serialize> Serialize for Limit<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Limit::None => serializer.serialize_str("none"),
            Limit::Some(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Limit<Duration> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.trim() == "none" {
            return Ok(Limit::None);
        }
        Duration::parse(&text)
            .map(Limit::Some)
            .map_err(de::Error::custom)
    }
}

impl JsonSchema for Limit<Duration> {
    fn schema_name() -> Cow<'static, str> {
        "DurationOrNone".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "duration",
            "pattern": DURATION_OR_NONE_PATTERN,
            "description": "A duration with a unit (`500ms`, `30s`, `2m`, `1h`), or `none` for no limit.",
            "examples": ["30s", "2m", "none"]
        })
    }
}

/// The regular expression the schema uses for durations that may be `none`.
pub const DURATION_OR_NONE_PATTERN: &str = r"^(\s*none\s*|\s*([0-9]+\s*(ms|s|m|h)\s*)+)$";

/// A size: an integer, or a number with a unit (`"30 KB"` = 30 000, `"50 MiB"` = 52 428 800).
///
/// For budgets the number counts the engine's budget unit (characters by default), so
/// `"30 KB"` is a limit of 30 000 characters in `chars` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

impl Size {
    /// Parses an integer or a number with a decimal (`KB`, `MB`) or binary (`KiB`, `MiB`)
    /// unit.
    pub(crate) fn parse(text: &str) -> Result<Self, UnitError> {
        let trimmed = text.trim();
        if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(UnitError::Size(text.to_owned()));
        }
        let size = trimmed
            .parse::<bytesize::ByteSize>()
            .map_err(|_| UnitError::Size(text.to_owned()))?
            .as_u64();
        // The parser saturates: the largest value, unless written as that integer, is an
        // overflow (`99999999999 TiB`), which would otherwise pass as "no limit".
        if size == u64::MAX && trimmed.parse::<u64>().is_err() {
            return Err(UnitError::SizeTooLarge(text.to_owned()));
        }
        Ok(Size(size))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

struct SizeVisitor;

impl Visitor<'_> for SizeVisitor {
    type Value = Size;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer or a size string like `30 KB`")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
        Ok(Size(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
        u64::try_from(v)
            .map(Size)
            .map_err(|_| E::custom(format!("size `{v}` is negative")))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
        Size::parse(v).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SizeVisitor)
    }
}

impl JsonSchema for Size {
    fn schema_name() -> Cow<'static, str> {
        "Size".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A size: a non-negative integer, or a number with a unit like `30 KB` (decimal) or `50 MiB` (binary). For budgets it counts the engine's budget unit.",
            "anyOf": [
                { "type": "integer", "minimum": 0 },
                { "type": "string", "format": "size", "pattern": SIZE_PATTERN }
            ],
            "examples": [30000, "30 KB", "50 MiB"]
        })
    }
}

/// The regular expression the schema uses for size strings.
pub const SIZE_PATTERN: &str = r"^\s*[0-9]+(\.[0-9]+)?\s*([kKmMgGtT][iI]?)?[bB]?\s*$";

/// What budgets count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetUnit {
    /// Unicode scalar values.
    #[default]
    Chars,
    /// UTF-8 bytes.
    Bytes,
}

impl fmt::Display for BudgetUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BudgetUnit::Chars => "chars",
            BudgetUnit::Bytes => "bytes",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        let table = [
            ("500ms", 500),
            ("30s", 30_000),
            ("2m", 120_000),
            ("1h", 3_600_000),
            ("1m 30s", 90_000),
            (" 6s ", 6_000),
        ];
        for (text, ms) in table {
            assert_eq!(
                Duration::parse(text).map(|d| d.as_millis()),
                Ok(ms),
                "{text}"
            );
        }
    }

    #[test]
    fn durations_without_units_are_rejected() {
        for text in ["", "30", "s", "5 minutes", "-1s", "1.5s", "none", "2d"] {
            assert!(Duration::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn durations_display_in_the_largest_exact_unit() {
        for (ms, text) in [
            (0, "0ms"),
            (500, "500ms"),
            (30_000, "30s"),
            (120_000, "2m"),
            (7_200_000, "2h"),
        ] {
            assert_eq!(Duration::from_millis(ms).to_string(), text);
        }
    }

    #[test]
    fn durations_match_their_schema_pattern() {
        let pattern = regex::Regex::new(DURATION_PATTERN).unwrap();
        for text in ["500ms", "30s", "1m 30s", "1h"] {
            assert!(pattern.is_match(text), "{text}");
        }
        for text in ["30", "none", "1.5s", "2d"] {
            assert!(!pattern.is_match(text), "{text}");
        }
    }

    #[test]
    fn sizes_parse_integers_and_units() {
        let table = [
            ("30000", 30_000),
            ("30 KB", 30_000),
            ("50 MiB", 52_428_800),
            ("1.5 KiB", 1536),
        ];
        for (text, value) in table {
            assert_eq!(Size::parse(text), Ok(Size(value)), "{text}");
        }
        for text in ["", "KB", "-1", "ten"] {
            assert!(Size::parse(text).is_err(), "{text}");
        }
        // Too large for 64 bits: an error, not a saturated "no limit".
        for text in [
            "99999999999 TiB",
            "20 EiB",
            "1e30 B",
            "99999999999999999999 KB",
        ] {
            assert!(
                matches!(
                    Size::parse(text),
                    Err(UnitError::SizeTooLarge(_)) | Err(UnitError::Size(_))
                ),
                "{text}"
            );
        }
        assert_eq!(
            Size::parse("99999999999 TiB").unwrap_err().to_string(),
            "`99999999999 TiB` is too large: a size must be below 16 EiB"
        );
        assert_eq!(Size::parse("18446744073709551615"), Ok(Size(u64::MAX)));
    }

    #[test]
    fn limits_accept_none() {
        let none: Limit<Duration> = serde_json::from_str("\"none\"").unwrap();
        assert_eq!(none, Limit::None);
        let some: Limit<Duration> = serde_json::from_str("\"2m\"").unwrap();
        assert_eq!(some, Limit::Some(Duration::from_millis(120_000)));
    }
}
