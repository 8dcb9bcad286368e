//! Tests of host selection: reproducibility, fairness across strata,
//! rounding and every bad input's message.

use super::*;

fn host(id: &str, labels: &[(&str, &str)]) -> Host {
    Host {
        id: id.to_owned(),
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

/// `n` hosts `h000`.., zones a/b/c in the proportions 5:3:2, versions
/// alternating.
fn fleet(n: usize) -> Vec<Host> {
    (0..n)
        .map(|i| {
            let zone = match i % 10 {
                0..=4 => "a",
                5..=7 => "b",
                _ => "c",
            };
            let version = if i % 2 == 0 { "v1" } else { "v2" };
            host(&format!("h{i:03}"), &[("zone", zone), ("version", version)])
        })
        .collect()
}

fn request(selection: HostSelection, stratify_by: &[&str], seed: u64) -> SelectionRequest {
    SelectionRequest {
        selection,
        stratify_by: stratify_by.iter().map(|s| (*s).to_owned()).collect(),
        seed,
        strict: false,
    }
}

fn pick(hosts: &[Host], req: &SelectionRequest) -> Selection {
    select_hosts(hosts, req).expect("selection")
}

#[test]
fn same_seed_picks_the_same_hosts_in_any_input_order() {
    let hosts = fleet(100);
    let req = request(HostSelection::Count(10), &[], 42);
    let first = pick(&hosts, &req);
    assert_eq!(first.hosts.len(), 10);
    assert_eq!(pick(&hosts, &req), first);

    let mut reversed = hosts.clone();
    reversed.reverse();
    assert_eq!(pick(&reversed, &req), first);
    let mut shuffled = hosts.clone();
    let mut rng = SplitMix64::new(9);
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.below(i as u64 + 1) as usize);
    }
    assert_eq!(pick(&shuffled, &req), first);

    let stratified = request(HostSelection::Count(10), &["zone"], 42);
    assert_eq!(pick(&shuffled, &stratified), pick(&hosts, &stratified));

    let mut sorted = first.hosts.clone();
    sorted.sort();
    assert_eq!(first.hosts, sorted, "chosen ids are sorted");
    assert!(!first.capped);
    assert_eq!((first.eligible, first.requested), (100, 10));
}

#[test]
fn different_seeds_pick_different_hosts() {
    let hosts = fleet(100);
    let picks: BTreeSet<Vec<String>> = (0..20)
        .map(|seed| pick(&hosts, &request(HostSelection::Count(10), &[], seed)).hosts)
        .collect();
    // C(100, 10) is 1.7e13: twenty seeds give twenty different sets.
    assert_eq!(picks.len(), 20);
}

#[test]
fn choice_is_uniform_over_hosts() {
    // Over many seeds every host is chosen about K/n of the time.
    let hosts = fleet(20);
    let mut counts = BTreeMap::new();
    for seed in 0..4_000 {
        for id in pick(&hosts, &request(HostSelection::Count(5), &[], seed)).hosts {
            *counts.entry(id).or_insert(0u32) += 1;
        }
    }
    assert_eq!(counts.len(), 20);
    // Each expects 1,000 with a standard deviation near 27.
    for (id, count) in counts {
        assert!((900..=1_100).contains(&count), "{id} chosen {count} times");
    }
}

#[test]
fn count_above_live_hosts_takes_all_or_fails_when_strict() {
    let hosts = fleet(3);
    let mut req = request(HostSelection::Count(5), &[], 1);
    let all = pick(&hosts, &req);
    assert_eq!(all.hosts, vec!["h000", "h001", "h002"]);
    assert!(all.capped);
    assert_eq!((all.eligible, all.requested), (3, 5));

    req.strict = true;
    let err = select_hosts(&hosts, &req).unwrap_err();
    assert_eq!(
        err.to_string(),
        "count 5 is more than the 3 live hosts, and strict is set"
    );
    // Exactly the live hosts is not capped, strict or not.
    req.selection = HostSelection::Count(3);
    let exact = pick(&hosts, &req);
    assert!(!exact.capped);
    assert_eq!(exact.hosts.len(), 3);
}

#[test]
fn all_takes_every_host_and_counts_strata() {
    let hosts = fleet(10);
    let sel = pick(&hosts, &request(HostSelection::All, &["zone"], 0));
    assert_eq!(sel.hosts.len(), 10);
    let counts: Vec<(usize, usize)> = sel.strata.iter().map(|s| (s.eligible, s.chosen)).collect();
    assert_eq!(counts, vec![(5, 5), (3, 3), (2, 2)]);
    assert!(pick(&hosts, &request(HostSelection::All, &[], 0))
        .strata
        .is_empty());
}

#[test]
fn stratified_choice_is_proportional_and_covers_every_stratum() {
    let hosts = fleet(100);
    for seed in 0..50 {
        let sel = pick(&hosts, &request(HostSelection::Count(10), &["zone"], seed));
        let by_zone: Vec<(&str, usize, usize)> = sel
            .strata
            .iter()
            .map(|s| (s.labels["zone"].as_str(), s.eligible, s.chosen))
            .collect();
        assert_eq!(by_zone, vec![("a", 50, 5), ("b", 30, 3), ("c", 20, 2)]);
        // The hosts chosen really are in those strata.
        for stratum in &sel.strata {
            let zone = &stratum.labels["zone"];
            let chosen = sel
                .hosts
                .iter()
                .filter(|id| {
                    hosts
                        .iter()
                        .any(|h| &h.id == *id && &h.labels["zone"] == zone)
                })
                .count();
            assert_eq!(chosen, stratum.chosen, "zone {zone}");
        }
    }
    // Two labels: six strata, all covered by six hosts.
    let sel = pick(
        &hosts,
        &request(HostSelection::Count(6), &["zone", "version"], 3),
    );
    assert_eq!(sel.strata.len(), 6);
    assert!(sel.strata.iter().all(|s| s.chosen == 1), "{:?}", sel.strata);
}

#[test]
fn small_strata_get_one_host_when_count_allows() {
    // 90:9:1 with K = 10 is 9 : 0.9 : 0.1 by proportion, 8 : 1 : 1 with
    // the floor of one.
    assert_eq!(allocate(&[90, 9, 1], 10, &[0, 0, 0]), vec![8, 1, 1]);
    // K below the number of strata: largest remainders win.
    assert_eq!(allocate(&[50, 30, 20], 2, &[0, 0, 0]), vec![1, 1, 0]);
    // Equal remainders go by the seeded tie break, not by position.
    assert_eq!(allocate(&[10, 10, 10], 1, &[1, 9, 5]), vec![0, 1, 0]);
    assert_eq!(allocate(&[10, 10, 10], 2, &[1, 9, 5]), vec![0, 1, 1]);
    // Everything asked for is everything there is.
    assert_eq!(allocate(&[4, 1, 2], 7, &[0, 0, 0]), vec![4, 1, 2]);
}

#[test]
fn allocation_is_proportional_on_random_fleets() {
    let mut rng = SplitMix64::new(2024);
    for _ in 0..500 {
        let strata = 1 + rng.below(6) as usize;
        let sizes: Vec<usize> = (0..strata).map(|_| 1 + rng.below(40) as usize).collect();
        let total: usize = sizes.iter().sum();
        let target = 1 + rng.below(total as u64) as usize;
        let ties: Vec<u64> = (0..strata).map(|_| rng.next_u64()).collect();
        let alloc = allocate(&sizes, target, &ties);
        assert_eq!(alloc.iter().sum::<usize>(), target, "{sizes:?} {target}");
        for (h, (&got, &size)) in alloc.iter().zip(&sizes).enumerate() {
            assert!(got <= size, "{sizes:?} {target}: {alloc:?}");
            if target >= strata {
                assert!(got >= 1, "{sizes:?} {target}: {alloc:?}");
            }
            let quota = target as f64 * size as f64 / total as f64;
            // Hamilton's method is within one of the quota; when every
            // quota is at least one the floor never moves it.
            if sizes.iter().all(|&s| target * s >= total) {
                assert!((got as f64 - quota).abs() < 1.0, "stratum {h}: {alloc:?}");
            }
        }
    }
}

#[test]
fn hosts_without_a_stratify_label_form_their_own_stratum() {
    let hosts = vec![
        host("a", &[("zone", "z1")]),
        host("b", &[("zone", "z2")]),
        host("c", &[]),
    ];
    let sel = pick(&hosts, &request(HostSelection::Count(3), &["zone"], 5));
    assert_eq!(sel.strata.len(), 3);
    assert!(
        sel.strata[0].labels.is_empty(),
        "the unlabelled stratum sorts first"
    );
    assert_eq!(sel.hosts, vec!["a", "b", "c"]);
}

#[test]
fn percent_rounds_up_exactly() {
    let cases = [
        (10.0, 30, 3), // 3.0000000000000004 in floating point
        (33.3, 1000, 333),
        (50.0, 5, 3),
        (1.0, 5, 1),
        (0.0001, 3, 1),
        (100.0, 7, 7),
        (12.5, 8, 1),
        (12.6, 8, 2),
        (70.0, 10, 7),
    ];
    for (p, n, want) in cases {
        let sel = pick(&fleet(n), &request(HostSelection::Percent(p), &[], 1));
        assert_eq!(sel.hosts.len(), want, "{p}% of {n}");
        assert_eq!(sel.requested, want);
        assert!(!sel.capped);
    }
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let hosts = fleet(4);
    let err =
        |hosts: &[Host], req: SelectionRequest| select_hosts(hosts, &req).unwrap_err().to_string();
    for p in [0.0, -5.0, 100.5, f64::NAN] {
        let msg = err(&hosts, request(HostSelection::Percent(p), &[], 0));
        assert_eq!(msg, format!("percent {p} is outside (0, 100]"));
    }
    assert_eq!(
        err(&hosts, request(HostSelection::Count(0), &[], 0)),
        "count must be at least 1"
    );
    assert_eq!(
        err(&[], request(HostSelection::All, &[], 0)),
        "no live host runs the service"
    );
    assert_eq!(
        err(&hosts, request(HostSelection::All, &["zone", "rack"], 0)),
        "no live host has the label `rack` to stratify by (labels seen: version, zone)"
    );
    assert_eq!(
        err(&[host("x", &[])], request(HostSelection::All, &["rack"], 0)),
        "no live host has the label `rack` to stratify by (labels seen: none)"
    );
    assert_eq!(
        err(&hosts, request(HostSelection::All, &["zone", "zone"], 0)),
        "stratify_by names the label `zone` more than once"
    );
    let twice = vec![host("x", &[]), host("y", &[]), host("x", &[])];
    assert_eq!(
        err(&twice, request(HostSelection::All, &[], 0)),
        "host `x` is listed more than once"
    );
}

#[test]
fn selection_reads_and_writes_the_api_shape() {
    let all: HostSelection = serde_json::from_str(r#""all""#).unwrap();
    assert_eq!(all, HostSelection::All);
    let count: HostSelection = serde_json::from_str(r#"{"count":3}"#).unwrap();
    assert_eq!(count, HostSelection::Count(3));
    let percent: HostSelection = serde_json::from_str(r#"{"percent":12.5}"#).unwrap();
    assert_eq!(percent, HostSelection::Percent(12.5));
    assert!(serde_json::from_str::<HostSelection>(r#"{"count":-1}"#).is_err());
    assert_eq!(serde_json::to_string(&count).unwrap(), r#"{"count":3}"#);
}
