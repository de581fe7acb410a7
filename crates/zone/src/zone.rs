//! One zone's data, shaped for answering.

use bulwark_proto::Name;

#[derive(Debug, Clone)]
pub struct Zone {
    apex: Name,
}

impl Zone {
    pub fn empty(apex: Name) -> Zone {
        Zone { apex }
    }

    pub fn apex(&self) -> &Name {
        &self.apex
    }
}
