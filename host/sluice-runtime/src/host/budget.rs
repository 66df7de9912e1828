//! `sluice:tools/budget` and `sluice:tools/key-policy`, answered from the call's
//! [`CallBudget`](crate::host::state::CallBudget) and refused files.

use std::time::Instant;

use crate::host::state::CallState;

/// `sluice:tools/budget`: the call's cap, page budget and search time left.
impl crate::host::bindings::budget::Host for CallState {
    fn max_result_bytes(&mut self) -> u32 {
        self.budget.max_result_bytes
    }

    fn page_bytes(&mut self, path: String) -> u32 {
        sluice_file_tools::budget::page_bytes(self.budget.max_result_bytes, &path)
            .map_or(0, |p| p as u32)
    }

    fn time_budget_ms(&mut self) -> u32 {
        let left = self
            .budget
            .search_until
            .saturating_duration_since(Instant::now());
        u32::try_from(left.as_millis()).unwrap_or(u32::MAX)
    }
}

/// `sluice:tools/key-policy`: the component's key-material name patterns, and the names of
/// the files it may not read ([`crate::host::refused`]).
impl crate::host::bindings::key_policy::Host for CallState {
    fn is_key_name(&mut self, name: String, directory: bool) -> bool {
        use sluice_keys::KeyNamePolicy;
        let names = &self.budget.key_names;
        if directory {
            names.is_key_dir(&name)
        } else {
            // A secret's or key's source the configuration names is refused as a key file.
            names.is_key_file(&name) || self.refused.is_refused_name(&name)
        }
    }
}
