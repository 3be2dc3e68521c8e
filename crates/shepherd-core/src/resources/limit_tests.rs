use serde_json::json;

use super::*;

fn layer(value: &Value) -> LimitsLayer {
    LimitsLayer::from_json(Some(value)).unwrap()
}

#[test]
fn sizes_take_bytes_and_binary_units_and_read_back_in_the_largest_whole_unit() {
    for (text, bytes) in [
        ("1048576", 1 << 20),
        ("512M", 512 << 20),
        ("4G", 4 << 30),
        ("4g", 4 << 30),
        ("4GiB", 4 << 30),
        ("4 GB", 4 << 30),
        ("1.5G", 3 << 29),
        ("2T", 2 << 40),
        ("2048K", 2 << 20),
    ] {
        assert_eq!(text.parse::<Bytes>(), Ok(Bytes(bytes)), "{text}");
    }
    for bad in ["", "G", "-1G", "4X", "1K", "0", "1.2.3M", "lots"] {
        assert!(bad.parse::<Bytes>().is_err(), "{bad} was accepted");
    }
    assert_eq!(Bytes(8 << 30).to_string(), "8 GiB");
    assert_eq!(Bytes(3 << 29).to_string(), "1536 MiB");
    assert_eq!(Bytes((1 << 20) + 1).to_string(), "1048577 B");
}

#[test]
fn cpus_are_a_decimal_number_in_range() {
    assert_eq!("1.5".parse::<Cpus>().map(Cpus::millis), Ok(1500));
    assert_eq!(Cpus::read(&json!(2)).map(Cpus::millis), Some(2000));
    assert_eq!(Cpus::from_millis(1500).unwrap().to_string(), "1.5");
    assert_eq!(Cpus::from_millis(250).unwrap().to_string(), "0.25");
    assert_eq!(Cpus::from_millis(2000).unwrap().to_string(), "2");
    for bad in [
        json!(0),
        json!(-1),
        json!(0.001),
        json!(5000),
        json!("many"),
    ] {
        assert_eq!(Cpus::read(&bad), None, "{bad}");
    }
}

#[test]
fn a_block_is_read_with_unlimited_and_a_bad_value_is_refused_naming_it() {
    let read = layer(&json!({"pids": 512, "memory": "4G", "cpus": 1.5, "disk": "unlimited"}));
    assert_eq!(read.pids, Some(Cap::At(512)));
    assert_eq!(read.memory, Some(Cap::At(Bytes(4 << 30))));
    assert_eq!(read.cpus, Some(Cap::At(Cpus::from_millis(1500).unwrap())));
    assert_eq!(read.disk, Some(Cap::Unlimited));
    let refused = LimitsLayer::from_json(Some(&json!({"memory": "4 gallons"}))).unwrap_err();
    assert_eq!(refused.field, "limits.memory");
    assert!(
        refused
            .to_string()
            .starts_with("invalid limits.memory \"4 gallons\": expected a size"),
        "{refused}"
    );
    let refused = LimitsLayer::from_json(Some(&json!({"pid": 5}))).unwrap_err();
    assert!(refused.to_string().contains("\"pid\""), "{refused}");
    assert!(
        refused.to_string().contains("pids, memory, cpus and disk"),
        "{refused}"
    );
    let refused = LimitsLayer::from_json(Some(&json!({"pids": 0}))).unwrap_err();
    assert!(refused.to_string().contains("1 or more"), "{refused}");
    assert!(LimitsLayer::from_json(Some(&json!(4))).is_err());
}

#[test]
fn a_layer_and_the_limits_read_back_from_their_own_json() {
    let written = layer(&json!({"pids": 64, "memory": "1G", "disk": "unlimited"}));
    let json = serde_json::to_value(written).unwrap();
    assert_eq!(
        json,
        json!({"pids": 64, "memory": 1_073_741_824_u64, "disk": "unlimited"})
    );
    assert_eq!(
        serde_json::from_value::<LimitsLayer>(json).unwrap(),
        written
    );
    let limits = Limits::DEFAULT.over(&written);
    let json = serde_json::to_value(limits).unwrap();
    assert_eq!(serde_json::from_value::<Limits>(json).unwrap(), limits);
    assert_eq!(limits.to_string(), "pids 64, memory 1 GiB");
}

#[test]
fn the_defaults_leave_ordinary_work_alone() {
    let limits = Limits::DEFAULT;
    assert!(limits.pids.is_some_and(|n| n >= 150 * 4));
    assert!(limits.memory.is_some_and(|m| m.get() >= 4 * (256 << 20)));
    assert!(limits.disk.is_some_and(|d| d.get() >= 64 << 20));
}

#[test]
fn a_layer_over_the_limits_replaces_and_one_that_may_only_lower_cannot_lift() {
    let settings = layer(&json!({"memory": "2G", "pids": 1000}));
    let definition = layer(&json!({"memory": "16G", "pids": 100, "disk": "unlimited"}));
    let base = Limits::DEFAULT.over(&settings);
    let raised = base.over(&definition);
    assert_eq!(raised.memory, Some(Bytes(16 << 30)));
    assert_eq!(raised.pids, Some(100));
    assert_eq!(raised.disk, None);
    let lowered = base.lowered_by(&definition);
    assert_eq!(
        lowered.memory,
        Some(Bytes(2 << 30)),
        "the settings are a floor"
    );
    assert_eq!(lowered.pids, Some(100), "a lower value applies");
    assert_eq!(
        lowered.disk,
        Limits::DEFAULT.disk,
        "unlimited lifts nothing"
    );
    assert_eq!(
        Limits::DEFAULT.over(&LimitsLayer::default()),
        Limits::DEFAULT
    );
}

#[test]
fn tightest_takes_the_lower_and_no_limit_is_the_highest() {
    let asked = Limits {
        pids: Some(10),
        ..Limits::NONE
    };
    let tightened = Limits::DEFAULT.tightest(&asked);
    assert_eq!(tightened.pids, Some(10));
    assert_eq!(tightened.memory, Limits::DEFAULT.memory);
    assert_eq!(Limits::NONE.tightest(&Limits::NONE), Limits::NONE);
}

#[test]
fn a_stop_names_the_limit_and_its_value() {
    assert_eq!(
        stopped_by(Resource::Memory, &Limits::DEFAULT),
        "was stopped by its memory limit (8 GiB)"
    );
    let enforced = Enforcement {
        by: Mechanism::Rlimits,
        unapplied: vec![Unapplied {
            resource: Resource::Cpus,
            why: "not applied (no cgroup)".into(),
        }],
    };
    assert_eq!(
        enforced.to_string(),
        "rlimits; cpus: not applied (no cgroup)"
    );
}
