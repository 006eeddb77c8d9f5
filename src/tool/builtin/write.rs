//! `write_file`: creates or replaces a whole file atomically. Replacing an existing text file
//! keeps its encoding, its CRLF line endings (when the new content has no CRs of its own) and
//! its permission bits, so a model that thinks in UTF-8 and `\n` cannot silently convert it.

use serde_json::{json, Value};

use crate::sandbox::beneath::{self, Entry, Parents};
use crate::tool::read_limit;
use crate::tool::text::{self, Encoding, LineEnding};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

pub struct WriteFile;

const DESCRIPTION: &str = "\
Writes a file, replacing it entirely if it exists and creating missing parent directories. \
The write is atomic and an existing file keeps its permissions, encoding and CRLF line \
endings. Use it for new files and complete rewrites; to change part of an existing file \
prefer edit_file or multi_edit, which send only the changed text. Read an existing file \
before overwriting it. Reports whether the file was created, overwritten or already had \
exactly this content.";

impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to write, absolute or relative to the workspace root"
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file"
                }
            },
            "required": ["path", "content"]
        })
    }

    fn family(&self) -> Family {
        Family::Writer
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["path"],
            default: None,
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args::required_str(args, "path")?;
        let content = args::required_str(args, "content")?;
        let path = ctx.resolve_write(shown)?;
        let entry = Entry::open(&path, Parents::Create)
            .map_err(|e| text::io_failure("cannot create the directory for", shown, &e))?;
        let previous = existing(&entry, shown)?;
        let (bytes, kept) = match &previous {
            Some(Previous::Text { text, encoding, .. }) => {
                let ending = if content.contains('\r') {
                    LineEnding::Lf
                } else {
                    LineEnding::detect(text)
                };
                let converted = ending.apply(content);
                let kept = Kept {
                    ending,
                    encoding: *encoding,
                };
                (text::encode(&converted, *encoding), kept)
            }
            _ => (content.as_bytes().to_vec(), Kept::default()),
        };
        if previous.as_ref().and_then(Previous::bytes) == Some(&bytes[..]) {
            return Ok(format!(
                "{shown} unchanged: it already has exactly this content"
            ));
        }
        entry
            .replace(&bytes)
            .map_err(|e| text::io_failure("cannot write", shown, &e))?;
        let lines = content.lines().count();
        let verb = if previous.is_some() {
            "Overwrote"
        } else {
            "Created"
        };
        Ok(format!(
            "{verb} {shown} ({lines} line{}, {} bytes){}",
            if lines == 1 { "" } else { "s" },
            bytes.len(),
            kept.note()
        ))
    }
}

/// What was at the path before the write.
enum Previous {
    Text {
        text: String,
        encoding: Encoding,
        bytes: Vec<u8>,
    },
    /// Not decodable as text: replaced byte for byte with the new UTF-8 content.
    Binary { bytes: Vec<u8> },
    /// Too large to compare or re-encode cheaply: replaced with the new UTF-8 content.
    Large,
}

impl Previous {
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Previous::Text { bytes, .. } | Previous::Binary { bytes } => Some(bytes),
            Previous::Large => None,
        }
    }
}

fn existing(entry: &Entry, shown: &str) -> Result<Option<Previous>, ToolError> {
    let failed = |e: &std::io::Error| text::io_failure("cannot write", shown, e);
    // The type is checked on the entry first so a socket gets a clear refusal rather than the
    // error of opening it.
    let Some(meta) = entry.metadata().map_err(|e| failed(&e))? else {
        return Ok(None);
    };
    if meta.file_type().is_symlink() {
        // The checked path had its final symlink followed, so one here is new.
        return Err(failed(&beneath::path_changed()));
    }
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{shown} is a directory; give the path of a file inside it"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!(
            "{shown} is not a regular file (a device, socket or pipe); write_file only writes \
             regular files"
        )));
    }
    let Some(file) = entry.open_existing().map_err(|e| failed(&e))? else {
        return Ok(None);
    };
    // Checked again on the open file: the entry may have been replaced since.
    let meta = file.metadata().map_err(|e| failed(&e))?;
    if !meta.is_file() {
        return Err(failed(&beneath::path_changed()));
    }
    // The size the file reports is not trusted: reading stops at the cap.
    let mut file = file;
    let capped = read_limit::read_capped(&mut file, text::FULL_LOAD_MAX as usize)
        .map_err(|e| text::io_failure("cannot read", shown, &e))?;
    if !capped.complete {
        return Ok(Some(Previous::Large));
    }
    let bytes = capped.bytes;
    Ok(Some(match text::decode(&bytes) {
        Ok((text, encoding)) => Previous::Text {
            text,
            encoding,
            bytes,
        },
        Err(_) => Previous::Binary { bytes },
    }))
}

/// The properties of the old file carried over to the new content, for the report.
struct Kept {
    ending: LineEnding,
    encoding: Encoding,
}

impl Default for Kept {
    fn default() -> Self {
        Kept {
            ending: LineEnding::Lf,
            encoding: Encoding::Utf8,
        }
    }
}

impl Kept {
    fn note(&self) -> String {
        let mut notes = Vec::new();
        if self.ending == LineEnding::Crlf {
            notes.push("CRLF line endings".to_string());
        }
        if self.encoding != Encoding::Utf8 {
            notes.push(format!("{} encoding", self.encoding.label()));
        }
        if notes.is_empty() {
            String::new()
        } else {
            format!("; kept the file's {}", notes.join(" and "))
        }
    }
}
