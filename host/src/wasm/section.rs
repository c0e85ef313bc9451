//! The specs `piton build` writes into the component it builds: a custom section
//! named `piton:specs` holding each tool as the component's code gave it at build
//! time, so that a load of the plugins folder lists the component's tools without
//! compiling it, and a cold start with many plugins answers at once.
//!
//! The section is the tool author's, as hostile as the rest of the component, and is
//! believed no more than the specs kept in the compile cache (see `specs`): only the
//! plugins folder reads it (never `piton check`, `add`, `update` or `inspect`, which
//! read the code); the component's world and imports come from its own export and
//! import sections, never from this one; its tools pass every check a load makes of
//! what a guest returns; and it is believed only until the code is compiled: the
//! specs the code gives are read before any call runs it, and a section that
//! differs is refused (the tools' calls fail, and the tools are loaded again from the
//! code; this process does not read that component's section again).

use serde::{Deserialize, Serialize};
use wasmparser::{ComponentExport, ComponentImport};

use super::diagnose;
use super::specs::{Declared, MAX_SIZE, Specs, WorldName};

/// Whether a load reads the `piton:specs` section of a component the cache lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sections {
    /// Its tools are made from the section, checked against the code before any call:
    /// what the plugins folder does.
    Believed,
    /// Its specs are read from its code: what every other load does.
    Ignored,
}

/// The custom section's name.
pub(crate) const NAME: &str = "piton:specs";

/// The most refused components a process remembers (see [`Refused`]).
const MAX_REFUSED: usize = 1024;

/// The components (by digest) whose sections this process refused: their sections
/// are not read again. At most [`MAX_REFUSED`], so that components with lying
/// sections dropped into the folder one after another cannot grow it for ever; past
/// it all are forgotten at once, and a forgotten one's section is believed again only
/// until its code is compiled, as the first time.
#[derive(Debug, Default)]
pub(crate) struct Refused(std::sync::Mutex<std::collections::HashSet<String>>);

impl Refused {
    /// Remembers that the section of the component `sha256` was refused.
    pub(crate) fn insert(&self, sha256: &str) {
        let mut refused = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if refused.len() >= MAX_REFUSED && !refused.contains(sha256) {
            refused.clear();
        }
        refused.insert(sha256.to_owned());
    }

    /// Whether the section of the component `sha256` was refused.
    pub(crate) fn contains(&self, sha256: &str) -> bool {
        (self.0.lock())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(sha256)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

/// What the section's first field says: which piton wrote it, for which contract.
const FORMAT: &str = "piton specs section 1, piton:tool 0.1";

/// The most imports and exports read from a component's outermost sections.
const MAX_NAMES: usize = 4096;

/// The section's content, as JSON.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    format: String,
    tools: Vec<Declared>,
}

/// The tools the component `bytes` (whose digest is `sha256`) carries in its
/// `piton:specs` section, with its world and imports read from its own sections:
/// `Ok(None)` when it carries none (or is no component: its compile says why); why
/// the section cannot be used otherwise. Its tools are still to be checked as a
/// guest's answer is.
pub(crate) fn read(bytes: &[u8], sha256: &str) -> Result<Option<Specs>, String> {
    let Some(outline) = Outline::of(bytes)? else {
        return Ok(None);
    };
    let Some(payload) = outline.specs else {
        return Ok(None);
    };
    if payload.len() as u64 > MAX_SIZE {
        return Err(format!(
            "its `{NAME}` section is {} bytes, over the {MAX_SIZE} piton reads",
            payload.len()
        ));
    }
    let section: Section = serde_json::from_slice(payload)
        .map_err(|e| format!("its `{NAME}` section is not what piton writes: {e}"))?;
    if section.format != FORMAT {
        return Err(format!(
            "its `{NAME}` section is of another format ({}); build it again with this piton",
            crate::term::cut_end(&section.format, 80)
        ));
    }
    if let Some(problem) = outline
        .imports
        .iter()
        .find_map(|i| diagnose::registry_import_problem(i))
    {
        return Err(problem);
    }
    let world = diagnose::world_of(&outline.exports).map_err(|p| p.to_string())?;
    let specs = Specs {
        sha256: sha256.to_owned(),
        world: WorldName::from(world),
        imports: outline.imports,
        tools: section.tools,
    };
    specs.checked().map(Some)
}

/// The component `bytes` with `tools` (read from its code) as its only `piton:specs`
/// section, after its other sections; why not, when `bytes` is no component.
pub(crate) fn write(bytes: &[u8], tools: &[Declared]) -> Result<Vec<u8>, String> {
    let section = Section {
        format: FORMAT.to_owned(),
        tools: tools.to_vec(),
    };
    // Strings and booleans only: it always serializes.
    let payload = serde_json::to_vec(&section).unwrap_or_default();
    if !is_component(bytes) {
        return Err("it is not a WebAssembly component".to_owned());
    }
    let mut out = Vec::with_capacity(bytes.len() + payload.len() + 32);
    out.extend_from_slice(&HEADER);
    for section in sections(bytes) {
        let section = section?;
        if section.id != 0 || custom_name(section.payload)?.0 != NAME {
            out.extend_from_slice(section.whole);
        }
    }
    let mut content = Vec::with_capacity(payload.len() + NAME.len() + 5);
    leb128(&mut content, NAME.len());
    content.extend_from_slice(NAME.as_bytes());
    content.extend_from_slice(&payload);
    out.push(0);
    leb128(&mut out, content.len());
    out.extend_from_slice(&content);
    Ok(out)
}

/// A component's preamble: the magic number, then version 0xd, layer 1.
const HEADER: [u8; 8] = [0, b'a', b's', b'm', 0x0d, 0, 1, 0];

fn is_component(bytes: &[u8]) -> bool {
    bytes.get(..HEADER.len()) == Some(&HEADER[..])
}

/// What the outermost sections of a component say.
struct Outline<'a> {
    imports: Vec<String>,
    exports: Vec<String>,
    /// The content of its `piton:specs` section, after its name.
    specs: Option<&'a [u8]>,
}

impl<'a> Outline<'a> {
    /// `None` when `bytes` is no component.
    fn of(bytes: &'a [u8]) -> Result<Option<Self>, String> {
        if !is_component(bytes) {
            return Ok(None);
        }
        let mut outline = Outline {
            imports: Vec::new(),
            exports: Vec::new(),
            specs: None,
        };
        for section in sections(bytes) {
            let section = section?;
            match section.id {
                0 => {
                    let (name, content) = custom_name(section.payload)?;
                    if name == NAME && outline.specs.replace(content).is_some() {
                        return Err(format!("it has more than one `{NAME}` section"));
                    }
                }
                COMPONENT_IMPORTS => {
                    names(
                        &section,
                        "imports",
                        &mut outline.imports,
                        |i: ComponentImport<'_>| i.name.name,
                    )?;
                }
                COMPONENT_EXPORTS => {
                    names(
                        &section,
                        "exports",
                        &mut outline.exports,
                        |e: ComponentExport<'_>| e.name.name,
                    )?;
                }
                _ => {}
            }
        }
        Ok(Some(outline))
    }
}

/// Adds to `into` the name of each item (import or export) of the outermost
/// `section`, while it names no more than a component has.
fn names<'a, T: wasmparser::FromReader<'a>>(
    section: &Outer<'a>,
    what: &str,
    into: &mut Vec<String>,
    name: impl Fn(T) -> &'a str,
) -> Result<(), String> {
    let broken = |e: wasmparser::BinaryReaderError| format!("its {what} do not read: {e}");
    let reader = wasmparser::BinaryReader::new(section.payload, section.offset);
    for item in wasmparser::SectionLimited::<T>::new(reader).map_err(broken)? {
        into.push(name(item.map_err(broken)?).to_owned());
        if into.len() > MAX_NAMES {
            return Err(format!("it has more {what} than a component has"));
        }
    }
    Ok(())
}

/// The component binary format's ids of the outermost import and export sections.
const COMPONENT_IMPORTS: u8 = 10;
const COMPONENT_EXPORTS: u8 = 11;

/// One outermost section of a component.
struct Outer<'a> {
    id: u8,
    /// Its id, size and content.
    whole: &'a [u8],
    /// Its content.
    payload: &'a [u8],
    /// Where its content starts in the component.
    offset: usize,
}

/// The outermost sections of the component `bytes`, after its preamble, one at a
/// time (a file of many tiny sections costs no memory); nested modules and components
/// are sections too, not entered. After an error, nothing more.
fn sections(bytes: &[u8]) -> OuterSections<'_> {
    OuterSections {
        bytes,
        at: HEADER.len(),
    }
}

struct OuterSections<'a> {
    bytes: &'a [u8],
    /// Where the next section starts; past the end after an error.
    at: usize,
}

impl<'a> Iterator for OuterSections<'a> {
    type Item = Result<Outer<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let next = self.read();
        if next.is_err() {
            self.at = usize::MAX;
        }
        Some(next)
    }
}

impl<'a> OuterSections<'a> {
    fn read(&mut self) -> Result<Outer<'a>, String> {
        let broken = || "its sections do not read (the file is cut short or damaged)".to_owned();
        let bytes = self.bytes;
        let start = self.at;
        let id = *bytes.get(start).ok_or_else(broken)?;
        let (size, read) =
            read_leb128(bytes.get(start + 1..).unwrap_or_default()).ok_or_else(broken)?;
        let payload_at = start + 1 + read;
        let end = payload_at
            .checked_add(size)
            .filter(|end| *end <= bytes.len());
        let end = end.ok_or_else(broken)?;
        self.at = end;
        Ok(Outer {
            id,
            whole: bytes.get(start..end).ok_or_else(broken)?,
            payload: bytes.get(payload_at..end).ok_or_else(broken)?,
            offset: payload_at,
        })
    }
}

/// A custom section's name and the content after it.
fn custom_name(payload: &[u8]) -> Result<(&str, &[u8]), String> {
    let broken = || "a custom section's name does not read".to_owned();
    let (len, read) = read_leb128(payload).ok_or_else(broken)?;
    let end = read.checked_add(len).ok_or_else(broken)?;
    let name = payload.get(read..end).ok_or_else(broken)?;
    let name = std::str::from_utf8(name).map_err(|_| broken())?;
    Ok((name, payload.get(end..).unwrap_or_default()))
}

/// An unsigned LEB128 number of at most 32 bits at the start of `bytes`, and how many
/// bytes it took.
fn read_leb128(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value: u64 = 0;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return u32::try_from(value)
                .ok()
                .map(|value| (value as usize, i + 1));
        }
    }
    None
}

/// Appends `value` as unsigned LEB128.
fn leb128(out: &mut Vec<u8>, mut value: usize) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> Declared {
        Declared::example("count")
    }

    #[test]
    fn refused_sections_are_remembered_up_to_a_bound() {
        let refused = Refused::default();
        refused.insert("a");
        refused.insert("a");
        assert!(refused.contains("a") && !refused.contains("b"));
        assert_eq!(refused.len(), 1);
        for n in 0..MAX_REFUSED * 3 {
            refused.insert(&format!("{n:064x}"));
            assert!(refused.len() <= MAX_REFUSED);
        }
        // The one refused last is always remembered.
        assert!(refused.contains(&format!("{:064x}", MAX_REFUSED * 3 - 1)));
    }

    #[test]
    fn numbers_read_back_as_written() {
        for value in [0, 1, 127, 128, 300, 16_384, u32::MAX as usize] {
            let mut out = Vec::new();
            leb128(&mut out, value);
            assert_eq!(read_leb128(&out), Some((value, out.len())), "{value}");
        }
        assert_eq!(read_leb128(&[0x80, 0x80, 0x80, 0x80, 0x80]), None);
        assert_eq!(
            read_leb128(&[0xff, 0xff, 0xff, 0xff, 0x1f]),
            None,
            "over 32 bits"
        );
        assert_eq!(read_leb128(&[0x80]), None, "cut short");
    }

    #[test]
    fn what_is_no_component_carries_no_section_and_takes_none() {
        assert_eq!(read(b"\0asm\x01\0\0\0", "ab"), Ok(None));
        assert_eq!(read(b"", "ab"), Ok(None));
        assert!(write(b"\0asm\x01\0\0\0", &[tool()]).is_err());
    }

    #[test]
    fn a_section_is_written_once_and_cut_short_components_are_refused() {
        let empty = HEADER.to_vec();
        let once = write(&empty, &[tool()]).expect("a component");
        let twice = write(&once, &[tool()]).expect("a component");
        assert_eq!(once, twice, "writing again replaces the section");
        let outline = Outline::of(&once).expect("reads").expect("a component");
        assert!(outline.specs.is_some());
        for cut in 9..once.len() {
            assert!(Outline::of(&once[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn two_sections_are_refused() {
        let once = write(&HEADER, &[tool()]).expect("a component");
        let mut two = once.clone();
        two.extend_from_slice(&once[HEADER.len()..]);
        let error = read(&two, "ab").expect_err("two sections");
        assert!(
            error.contains("more than one `piton:specs` section"),
            "{error}"
        );
    }
}
