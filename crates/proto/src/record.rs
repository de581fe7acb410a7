//! A resource record with typed data, as read from a zone file or built for a message.

use crate::class::Class;
use crate::name::Name;
use crate::rdata::Rdata;
use crate::rtype::Rtype;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub owner: Name,
    pub class: Class,
    pub ttl: u32,
    pub rdata: Rdata,
}

impl Record {
    pub fn rtype(&self) -> Rtype {
        self.rdata.rtype()
    }
}
