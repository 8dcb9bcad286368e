//! Detection on a run: the rules judge the samples of all its member
//! profiles merged, so a fleet-wide run raises one finding per rule, not
//! one per host; each finding names the hosts where the rule's share is
//! highest.

use odp_profile::ProfileFrames;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{name_stacks, Detection, ProfileInput, RuleSet};

/// How many hosts a run's finding names.
pub const HOSTS_NAMED: usize = 5;

/// One member profile of a run, with its samples.
#[derive(Debug, Clone)]
pub struct Member {
    pub profile_id: Uuid,
    pub host: String,
    pub data: ProfileFrames,
}

/// A host of a run and the share a finding's rule measures there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostShare {
    pub host: String,
    pub profile_id: Uuid,
    /// Percent of the host's samples (or the kind's score).
    pub share: f64,
    pub samples: u64,
}

/// A rule that flags a run's merged samples.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFinding {
    pub detection: Detection,
    /// The hosts where the rule measures most, highest first, at most
    /// [`HOSTS_NAMED`]; hosts where it matched nothing are left out.
    pub hosts: Vec<HostShare>,
}

/// The rules that flag the run whose members are `members`, judged on
/// their merged samples. Rules judged per profile (see
/// [`RuleSet::judged_per_run`]) are left to the members' own evaluation.
/// Nothing when the members measure different events.
pub fn evaluate_run(rules: &RuleSet, service: &str, members: &[Member]) -> Vec<RunFinding> {
    let Some(merged) = ProfileFrames::merge(members.iter().map(|m| &m.data)) else {
        return Vec::new();
    };
    let mut found = rules.evaluate(&ProfileInput::new(service, &merged));
    found.retain(|d| rules.judged_per_run(&d.rule_id));
    name_stacks(&mut found, &merged);
    found
        .into_iter()
        .map(|detection| {
            let hosts = hosts_highest(rules, service, &detection.rule_id, members);
            RunFinding { detection, hosts }
        })
        .collect()
}

/// The members where `rule_id` measures most, highest first, ties by host.
fn hosts_highest(
    rules: &RuleSet,
    service: &str,
    rule_id: &str,
    members: &[Member],
) -> Vec<HostShare> {
    let mut hosts: Vec<HostShare> = members
        .iter()
        .filter_map(|m| {
            let share = rules.measure(rule_id, &ProfileInput::new(service, &m.data))?;
            Some(HostShare {
                host: m.host.clone(),
                profile_id: m.profile_id,
                share,
                samples: m.data.samples,
            })
        })
        .collect();
    hosts.sort_by(|a, b| {
        b.share
            .total_cmp(&a.share)
            .then_with(|| a.host.cmp(&b.host))
    });
    hosts.truncate(HOSTS_NAMED);
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{profile, stack_share_rule, RuleDef};

    fn rule(id: &str, function: &str, threshold: f64) -> RuleDef {
        stack_share_rule(id, serde_json::json!({ "function": function }), threshold)
    }

    fn member(host: &str, hot: u64, other: u64) -> Member {
        Member {
            profile_id: Uuid::from_u128(host.len() as u128 + hot as u128),
            host: host.into(),
            data: profile(&[(&[("main", ""), ("gc", "")], hot), (&[("main", "")], other)]),
        }
    }

    #[test]
    fn a_run_is_judged_on_its_merged_samples_and_names_its_hottest_hosts() {
        let (rules, errors) = RuleSet::compile([rule("gc", "^gc$", 20.0)]);
        assert!(errors.is_empty());
        // 10% and 15% alone, under the threshold; one host at 60% lifts
        // the run to 85 of 400 samples.
        let members = [
            member("a", 10, 90),
            member("b", 15, 85),
            member("c", 60, 40),
            member("d", 0, 100),
        ];
        let found = evaluate_run(&rules, "svc", &members);
        assert_eq!(found.len(), 1);
        let finding = &found[0];
        assert_eq!(finding.detection.rule_id, "gc");
        assert_eq!(finding.detection.share, 21.25);
        assert_eq!(finding.detection.samples_total, 400);
        let hosts: Vec<(&str, f64)> = finding
            .hosts
            .iter()
            .map(|h| (h.host.as_str(), h.share))
            .collect();
        assert_eq!(
            hosts,
            [("c", 60.0), ("b", 15.0), ("a", 10.0)],
            "d matched nothing"
        );
    }

    #[test]
    fn a_run_under_the_threshold_raises_nothing() {
        let (rules, _) = RuleSet::compile([rule("gc", "^gc$", 50.0)]);
        let members = [member("a", 10, 90), member("c", 60, 40)];
        assert!(evaluate_run(&rules, "svc", &members).is_empty());
    }

    #[test]
    fn hosts_named_are_capped() {
        let (rules, _) = RuleSet::compile([rule("gc", "^gc$", 1.0)]);
        let members: Vec<Member> = (1..=8)
            .map(|n| member(&format!("h{n}"), n * 10, 100 - n * 10))
            .collect();
        let found = evaluate_run(&rules, "svc", &members);
        let hosts: Vec<&str> = found[0].hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts, ["h8", "h7", "h6", "h5", "h4"]);
    }
}
