//! The serde types speedscope files are read with: lenient (optional
//! fields, numbers as `f64`), a profile as a plain struct so it streams,
//! samples interned as they are read, lists bounded as they are read.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{MAX_FRAMES, MAX_PROFILES};
use crate::snapshot::MAX_STACK_DEPTH;

#[derive(Deserialize)]
pub(super) struct RawFile {
    #[serde(rename = "$schema", default)]
    pub(super) schema: Option<String>,
    #[serde(default)]
    pub(super) shared: Option<RawShared>,
    #[serde(default)]
    pub(super) profiles: Option<Bounded<RawProfile, MAX_PROFILES>>,
}

#[derive(Deserialize)]
pub(super) struct RawShared {
    pub(super) frames: Bounded<RawFrame, MAX_FRAMES>,
}

#[derive(Deserialize)]
pub(super) struct RawFrame {
    pub(super) name: String,
    #[serde(default)]
    pub(super) file: Option<String>,
    #[serde(default)]
    pub(super) line: Option<f64>,
}

/// A profile of either type: a plain struct, so serde reads it field by
/// field instead of buffering it whole as an internally tagged enum would.
#[derive(Deserialize)]
pub(super) struct RawProfile {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) name: Option<String>,
    pub(super) unit: String,
    #[serde(rename = "endValue", default)]
    pub(super) end_value: Option<f64>,
    #[serde(default)]
    pub(super) samples: Option<Samples>,
    #[serde(default)]
    pub(super) weights: Option<Vec<f64>>,
    #[serde(default)]
    pub(super) events: Option<Vec<RawEvent>>,
}

#[derive(Deserialize)]
pub(super) struct RawEvent {
    #[serde(rename = "type")]
    pub(super) kind: EventType,
    pub(super) at: f64,
    pub(super) frame: u32,
}

#[derive(Deserialize)]
pub(super) enum EventType {
    O,
    C,
}

/// A list of at most `N` items.
pub(super) struct Bounded<T, const N: usize>(pub(super) Vec<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Bounded<T, N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items<T, const N: usize>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for Items<T, N> {
            type Value = Bounded<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a list of at most {N} items")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    if items.len() == N {
                        return Err(de::Error::custom(format!("more than {N} items")));
                    }
                    items.push(item);
                }
                Ok(Bounded(items))
            }
        }
        deserializer.deserialize_seq(Items(PhantomData))
    }
}

/// A sampled profile's samples, each stack stored once: the distinct
/// stacks, and each sample's index among them.
pub(super) struct Samples {
    pub(super) stacks: Vec<Box<[u32]>>,
    pub(super) ids: Vec<u32>,
}

impl<'de> Deserialize<'de> for Samples {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct All;
        impl<'de> Visitor<'de> for All {
            type Value = Samples;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of stacks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Samples, A::Error> {
                let mut index: HashMap<Box<[u32]>, u32> = HashMap::new();
                let mut ids = Vec::new();
                while let Some(Stack(stack)) = seq.next_element()? {
                    let next = index.len() as u32;
                    let id = *index.entry(stack.into_boxed_slice()).or_insert(next);
                    ids.push(id);
                }
                let mut stacks: Vec<Box<[u32]>> = vec![Box::default(); index.len()];
                for (stack, id) in index {
                    stacks[id as usize] = stack;
                }
                Ok(Samples { stacks, ids })
            }
        }
        deserializer.deserialize_seq(All)
    }
}

/// One sample's frame indexes, at most [`MAX_STACK_DEPTH`].
struct Stack(Vec<u32>);

impl<'de> Deserialize<'de> for Stack {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Frames;
        impl<'de> Visitor<'de> for Frames {
            type Value = Stack;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of frame indexes")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Stack, A::Error> {
                let mut frames = Vec::new();
                while let Some(frame) = seq.next_element()? {
                    if frames.len() == MAX_STACK_DEPTH {
                        return Err(de::Error::custom(format!(
                            "a sample deeper than {MAX_STACK_DEPTH} frames"
                        )));
                    }
                    frames.push(frame);
                }
                Ok(Stack(frames))
            }
        }
        deserializer.deserialize_seq(Frames)
    }
}
