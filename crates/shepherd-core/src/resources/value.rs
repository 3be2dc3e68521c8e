//! The values a `limits:` block holds: sizes ([`Bytes`]), CPUs ([`Cpus`]), and a value or
//! `unlimited` ([`Cap`]).
//!
//! Each value is read by one rule whether it comes from a definition's YAML, the settings'
//! JSON, a spawn's parameters or the command line, so `4G` means the same everywhere: sizes
//! take plain bytes or a number with `K`, `M`, `G` or `T` (binary units; `Ki`, `KiB` and `KB`
//! are read the same), CPUs a decimal number. On the wire a size is its bytes and a CPU count
//! its number, so programs reading `--json` need no parser.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A value that a `limits:` key holds.
pub trait LimitValue: Sized + Copy {
    /// Reads it from JSON; `None` when it is not a usable value.
    fn read(value: &Value) -> Option<Self>;
}

/// A size in bytes, 1 MiB or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    /// The smallest size a limit may be.
    pub const MIN: u64 = 1 << 20;

    /// The bytes.
    pub fn get(self) -> u64 {
        self.0
    }
}

const UNITS: [(&str, u32); 5] = [("", 0), ("K", 10), ("M", 20), ("G", 30), ("T", 40)];

impl FromStr for Bytes {
    type Err = ();

    /// `1048576`, `512M`, `4G`, `1.5GiB`, `2 t`.
    fn from_str(text: &str) -> Result<Self, ()> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let unit = unit.trim().to_ascii_uppercase();
        let unit = unit.strip_suffix('B').unwrap_or(&unit);
        let unit = unit.strip_suffix('I').unwrap_or(unit);
        let shift = UNITS.iter().find(|(name, _)| *name == unit).ok_or(())?.1;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.len() > 9 {
            return Err(());
        }
        let digits = format!("{whole}{fraction}");
        let mantissa: u128 = digits.parse().map_err(|_| ())?;
        let scale = 10u128.pow(u32::try_from(fraction.len()).map_err(|_| ())?);
        let bytes = (mantissa << shift) / scale;
        u64::try_from(bytes)
            .ok()
            .filter(|b| *b >= Self::MIN)
            .map(Self)
            .ok_or(())
    }
}

impl LimitValue for Bytes {
    fn read(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_u64().filter(|b| *b >= Self::MIN).map(Self),
            Value::String(text) => text.parse().ok(),
            _ => None,
        }
    }
}

impl fmt::Display for Bytes {
    /// In the largest binary unit that holds it whole: `8 GiB`, `1536 MiB`, `1048577 B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, shift) = UNITS
            .iter()
            .rev()
            .find(|(_, shift)| self.0.trailing_zeros() >= *shift)
            .copied()
            .unwrap_or(("", 0));
        if name.is_empty() {
            write!(f, "{} B", self.0)
        } else {
            write!(f, "{} {name}iB", self.0 >> shift)
        }
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::read(&value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid size {value}: expected {}",
                super::Resource::Memory.expected()
            ))
        })
    }
}

impl schemars::JsonSchema for Bytes {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Bytes".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "integer",
            "minimum": Self::MIN,
            "description": "A size in bytes (a string with K, M, G or T is read too)."
        })
    }
}

/// A number of CPUs, kept in thousandths: from 0.01 to 4096.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cpus(u32);

impl Cpus {
    /// Thousandths of a CPU.
    pub fn millis(self) -> u32 {
        self.0
    }

    /// From thousandths of a CPU, when in range.
    pub fn from_millis(millis: u32) -> Option<Self> {
        (10..=4_096_000).contains(&millis).then_some(Self(millis))
    }

    fn from_f64(cpus: f64) -> Option<Self> {
        if !cpus.is_finite() || !(0.01..=4096.0).contains(&cpus) {
            return None;
        }
        // In range, so the product fits.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let millis = (cpus * 1000.0).round() as u32;
        Self::from_millis(millis)
    }

    fn as_f64(self) -> f64 {
        f64::from(self.0) / 1000.0
    }
}

impl FromStr for Cpus {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        text.trim()
            .parse::<f64>()
            .ok()
            .and_then(Self::from_f64)
            .ok_or(())
    }
}

impl LimitValue for Cpus {
    fn read(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_f64().and_then(Self::from_f64),
            Value::String(text) => text.parse().ok(),
            _ => None,
        }
    }
}

impl fmt::Display for Cpus {
    /// `1.5`, `2`, `0.25`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / 1000;
        let fraction = self.0 % 1000;
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{fraction:03}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Cpus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.as_f64())
    }
}

impl<'de> Deserialize<'de> for Cpus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::read(&value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid cpus {value}: expected {}",
                super::Resource::Cpus.expected()
            ))
        })
    }
}

impl schemars::JsonSchema for Cpus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Cpus".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "minimum": 0.01,
            "maximum": 4096,
            "description": "A number of CPUs."
        })
    }
}

impl LimitValue for u32 {
    fn read(value: &Value) -> Option<Self> {
        let n = match value {
            Value::Number(n) => n.as_u64()?,
            Value::String(text) => text.trim().parse().ok()?,
            _ => return None,
        };
        Self::try_from(n).ok().filter(|n| *n >= 1)
    }
}

/// One limit as a layer writes it: a value, or `unlimited` to lift the limit below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap<T> {
    /// No limit.
    Unlimited,
    /// This limit.
    At(T),
}

impl<T> Cap<T> {
    /// The word that lifts a limit.
    pub const UNLIMITED: &'static str = "unlimited";
}

impl<T: LimitValue> Cap<T> {
    /// Reads `unlimited` or a value.
    pub fn read(value: &Value) -> Option<Self> {
        match value {
            Value::String(text) if text.trim().eq_ignore_ascii_case(Self::UNLIMITED) => {
                Some(Self::Unlimited)
            }
            other => T::read(other).map(Self::At),
        }
    }
}

impl<T: Serialize> Serialize for Cap<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Unlimited => serializer.serialize_str(Self::UNLIMITED),
            Self::At(value) => value.serialize(serializer),
        }
    }
}

impl<'de, T: LimitValue> Deserialize<'de> for Cap<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::read(&value).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid limit {value}: expected a value or unlimited"
            ))
        })
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Cap<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Cap_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let value = generator.subschema_for::<T>();
        schemars::json_schema!({
            "anyOf": [value, {"const": "unlimited"}],
            "description": "A limit, or `unlimited`."
        })
    }
}
