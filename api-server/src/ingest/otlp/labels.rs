//! Where an OTLP profile came from, as ODP sees it: the resource's
//! `service.name` is the service and `host.name` the host; the other
//! resource, scope, profile and (when every sample agrees) sample
//! attributes become labels.
//!
//! Labels follow ODP's rules (`crate::validate`): at most 16 per profile,
//! keys of letters, digits, `.`, `-` and `_`. An attribute that breaks
//! them is dropped, not the profile: attributes describe where samples
//! came from, the samples are still good, and OTLP lets a server say
//! what it dropped in `partial_success` while accepting the data. When
//! there are more attributes than labels, the ones reads filter on most
//! (the process, the Kubernetes workload, the container) are kept first.

use std::collections::BTreeSet;

use odp_store::Labels;
use opentelemetry_proto::tonic::common::v1::KeyValue;

use super::dictionary::Dictionary;
use crate::validate::{validate_labels, validate_name, MAX_LABELS};

pub(super) const SERVICE_NAME: &str = "service.name";
pub(super) const HOST_NAME: &str = "host.name";

/// Resource attributes kept before any other, in this order.
const FIRST: &[&str] = &[
    "process.pid",
    "process.executable.name",
    "k8s.namespace.name",
    "k8s.pod.name",
    "k8s.container.name",
    "k8s.deployment.name",
    "k8s.statefulset.name",
    "k8s.daemonset.name",
    "k8s.node.name",
    "container.id",
    "container.name",
    "service.namespace",
    "service.version",
    "service.instance.id",
    "deployment.environment.name",
    "deployment.environment",
];

/// A resource: its service, host and the labels its attributes make, in
/// the order they are kept.
#[derive(Debug, Clone)]
pub(super) struct Origin {
    pub service: String,
    pub host: Option<String>,
    /// Well-known attributes, then the others as sent.
    pub first: Vec<(String, String)>,
    pub rest: Vec<(String, String)>,
}

/// Key and scalar value of attributes sent as `KeyValue`s (resources and
/// scopes), whose keys may be in the dictionary's string table.
pub(super) fn key_values(
    dict: &Dictionary<'_>,
    attributes: &[KeyValue],
    warnings: &mut BTreeSet<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::with_capacity(attributes.len());
    for kv in attributes {
        let key = if kv.key.is_empty() {
            dict.string(kv.key_strindex, || "attribute key string".into())?
        } else {
            kv.key.as_str()
        };
        match dict.scalar(kv.value.as_ref(), || format!("attribute {key:?}"))? {
            Some(value) => out.push((key.to_owned(), value)),
            None => {
                warnings.insert(format!(
                    "attribute {key:?} is not kept: labels hold strings, numbers and booleans"
                ));
            }
        }
    }
    Ok(out)
}

/// The origin of a resource's profiles, or why none of them can be kept.
pub(super) fn origin(attributes: Vec<(String, String)>) -> Result<Origin, String> {
    let mut service = None;
    let mut host = None;
    let mut first = Vec::new();
    let mut rest = Vec::new();
    for (key, value) in attributes {
        match key.as_str() {
            SERVICE_NAME => service = Some(value),
            HOST_NAME => host = Some(value),
            k if FIRST.contains(&k) => first.push((key, value)),
            _ => rest.push((key, value)),
        }
    }
    first.sort_by_key(|(key, _)| FIRST.iter().position(|k| k == key));
    let service = service.ok_or_else(|| {
        format!(
            "the resource has no {SERVICE_NAME} attribute: ODP files profiles by service \
             (set it in the profiler or with the collector's resource processor)"
        )
    })?;
    validate_name("service", &service).map_err(|e| format!("{SERVICE_NAME} {service:?}: {e}"))?;
    if let Some(host) = &host {
        validate_name("host", host).map_err(|e| format!("{HOST_NAME} {host:?}: {e}"))?;
    }
    Ok(Origin {
        service,
        host,
        first,
        rest,
    })
}

/// One profile's labels, filled in the order they are kept.
pub(super) struct LabelSet<'w> {
    labels: Labels,
    over: Vec<String>,
    warnings: &'w mut BTreeSet<String>,
}

impl<'w> LabelSet<'w> {
    pub(super) fn new(warnings: &'w mut BTreeSet<String>) -> Self {
        LabelSet {
            labels: Labels::new(),
            over: Vec::new(),
            warnings,
        }
    }

    /// Keeps `key` unless it is taken, breaks ODP's label rules or no
    /// room is left (the `source` label ODP sets takes one).
    pub(super) fn push(&mut self, key: &str, value: &str) {
        if self.labels.contains_key(key) || self.over.iter().any(|k| k == key) {
            return;
        }
        if key == "source" {
            self.warnings.insert(
                "attribute \"source\" is not kept: ODP's `source` label says where a profile \
                 came from (otlp)"
                    .into(),
            );
            return;
        }
        let one = Labels::from([(key.to_owned(), value.to_owned())]);
        if let Err(e) = validate_labels(&one) {
            self.warnings
                .insert(format!("attribute {key:?} is not kept as a label: {e}"));
            return;
        }
        if self.labels.len() + 1 >= MAX_LABELS {
            self.over.push(key.to_owned());
            return;
        }
        self.labels.insert(key.to_owned(), value.to_owned());
    }

    pub(super) fn extend<'a>(&mut self, pairs: impl IntoIterator<Item = &'a (String, String)>) {
        for (key, value) in pairs {
            self.push(key, value);
        }
    }

    pub(super) fn finish(self) -> Labels {
        if !self.over.is_empty() {
            self.warnings.insert(format!(
                "attributes {:?} are not kept: ODP keeps at most {MAX_LABELS} labels a profile",
                self.over
            ));
        }
        self.labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_resource_names_service_and_host_and_well_known_labels_come_first() {
        let origin = origin(pairs(&[
            ("team", "payments"),
            ("k8s.pod.name", "checkout-7d9"),
            (SERVICE_NAME, "checkout"),
            ("process.pid", "4242"),
            (HOST_NAME, "node-1"),
        ]))
        .unwrap();
        assert_eq!(origin.service, "checkout");
        assert_eq!(origin.host.as_deref(), Some("node-1"));
        assert_eq!(
            origin.first,
            pairs(&[("process.pid", "4242"), ("k8s.pod.name", "checkout-7d9")])
        );
        assert_eq!(origin.rest, pairs(&[("team", "payments")]));

        let none = origin_err(&[(HOST_NAME, "node-1")]);
        assert!(none.contains("no service.name"), "{none}");
        let bad = origin_err(&[(SERVICE_NAME, "check out")]);
        assert!(bad.contains("\"check out\""), "{bad}");
    }

    fn origin_err(items: &[(&str, &str)]) -> String {
        origin(pairs(items)).unwrap_err()
    }

    #[test]
    fn bad_and_surplus_attributes_are_dropped_with_a_warning() {
        let mut warnings = BTreeSet::new();
        let mut set = LabelSet::new(&mut warnings);
        set.push("bad key/x", "v");
        set.push("ok", " padded ");
        set.push("source", "mine");
        for i in 0..20 {
            set.push(&format!("k{i:02}"), "v");
        }
        set.push("k00", "again");
        let labels = set.finish();
        assert_eq!(labels.len(), MAX_LABELS - 1, "room is left for `source`");
        assert_eq!(labels["k00"], "v", "the first value of a key wins");
        let text = warnings.iter().cloned().collect::<Vec<_>>().join("\n");
        for needle in ["\"bad key/x\"", "\"ok\"", "\"source\"", "k15", "at most 16"] {
            assert!(text.contains(needle), "{needle} in {text}");
        }
    }
}
