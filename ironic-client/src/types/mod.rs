//! The typed shapes of Ironic's requests and answers.
//!
//! Answers are parsed leniently: every field has a default, because a `fields`
//! query returns only what was asked for and newer microversions add fields.
//! String enums keep an `Other` fallback so that a state this client does not
//! know yet is reported, never a parse failure.

/// Declares a string-valued enum with an `Other(String)` fallback, serialised
/// as its string.
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $($(#[$vmeta:meta])* $variant:ident => $text:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A value this client does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The string Ironic uses.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $($text => Self::$variant,)*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:?}", self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Ok(Self::from(s.as_ref()))
            }
        }
    };
}

mod boot;
mod driver_info;
mod events;
mod firmware;
mod inventory;
mod node;
mod patch;
mod port;
mod power;
mod provision;
pub(crate) mod query;
mod state;
mod status;
mod validation;
mod vmedia;

pub use boot::{BootDevice, BootDeviceState};
pub use driver_info::DriverInfo;
pub use events::{EventSubscription, EventSubscriptionCreate};
pub use firmware::{BiosSetting, FirmwareComponent};
pub use inventory::{BootInfo, Cpu, Disk, Inventory, Memory, NetworkInterface, NodeInventory, SystemVendor};
pub use node::{Node, NodeCreate, NodeInterfaces};
pub use patch::PatchOperation;
pub use port::{Port, PortCreate};
pub use power::PowerTarget;
pub use provision::{ConfigDrive, ConfigDriveData, DeployRequest, DeployStep, ProvisionTarget, Step};
pub use query::{DEFAULT_PAGE_SIZE, NodeListQuery, NodePage, SortDir};
pub use state::{PowerState, ProvisionState};
pub use status::{NodeStatusSummary, STATUS_FIELDS};
pub use validation::{InterfaceValidation, NodeValidation};
pub use vmedia::{VirtualMedia, VirtualMediaDevice};

/// A JSON object, as Ironic's free-form fields (`properties`, `extra`…) are.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// `null` as the type's default, for fields Ironic may send as `null`.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(d)?.unwrap_or_default())
}
