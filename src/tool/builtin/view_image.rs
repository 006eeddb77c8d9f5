//! `view_image`: shows the model a PNG, JPEG, GIF or WebP file from the workspace.
//!
//! OpenAI-compatible servers accept images only as `image_url` content parts of a user
//! message: a tool result must stay text (OpenAI allows only text parts there, and many
//! compatible servers reject anything else). So the tool answers with a short text result and
//! leaves the image on the [`Tray`]; once every call of the round has its result, the agent
//! appends one user message carrying the round's images ([`Tray::take_message`]). The history
//! only grows at its end, so the cached prefix is untouched.
//!
//! The file is read through the sandbox (`check_read`, so `forbid_read` and the read roots
//! hold) and `read_limit` (regular files only), at most [`MAX_IMAGE_BYTES`]; its format is
//! judged by its first bytes, never by its name. A model not marked `vision = true` gets an
//! error naming that key: a text-only server would reject the whole request.
//!
//! One round attaches at most [`MAX_IMAGES_PER_ROUND`] images and [`MAX_ROUND_IMAGE_BYTES`]
//! of them together, reserved on the [`Tray`] before a file is read, so a reply with 200 calls
//! cannot make reasonix hold 200 images; a file already attached this round is not read again.
//! Every request carries all of the history's images, so they are also held to the request's
//! budget (`agent.max_image_bytes_per_request`, a [`RequestImages`] the agent gives each
//! round): past it a new image is refused rather than an old one dropped, which would change
//! the request prefix the provider has cached. A call past any cap is refused with the cap in
//! its text.

use crate::base64::base64;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde_json::{json, Value};

use crate::provider::Message;
use crate::tool::read_limit::{self, Refusal};
use crate::tool::{args, Family, Subjects, Tool, ToolContext, ToolError};

/// 5 MiB: the per-image limit of Anthropic's API and well under OpenAI's; a larger
/// screenshot is better scaled down than sent (the base64 form is a third larger again).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Images one round may attach: a vision model gains little from more at once, and each
/// costs its base64 form in memory and in every later request.
pub const MAX_IMAGES_PER_ROUND: usize = 8;

/// The most bytes (as read from disk) of one round's images together.
pub const MAX_ROUND_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

pub struct ViewImage;

const DESCRIPTION: &str = "\
Shows you an image file (PNG, JPEG, GIF or WebP, at most 5 MiB) from the workspace: the \
image is attached to the conversation right after this round's tool results. Use it for \
screenshots, diagrams and rendered output. Only works when the model accepts images.";

impl Tool for ViewImage {
    fn name(&self) -> &str {
        "view_image"
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
                    "description": "Image file, absolute or relative to the workspace root"
                }
            },
            "required": ["path"]
        })
    }

    fn family(&self) -> Family {
        Family::Reader
    }

    fn subjects(&self) -> Subjects {
        Subjects::Paths {
            keys: &["path"],
            default: None,
        }
    }

    fn execute(&self, args: &Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let shown = args::required_str(args, "path")?;
        ctx.images.check_vision()?;
        let path = ctx.resolve_read(shown)?;
        // The size on disk, for the reservation; a file larger than one image may be is
        // refused by the read below whatever it reserved.
        let size = std::fs::metadata(&path)
            .map_or(0, |m| m.len())
            .min(MAX_IMAGE_BYTES as u64);
        if ctx.images.reserve(&path, shown, size)? == Reserved::Already {
            return Ok(format!(
                "{shown}: already attached in this round; the image follows in the next message"
            ));
        }
        let attached = read_image(shown, &path).and_then(|(format, bytes)| {
            // The file grew after its size was reserved: what it holds now was never admitted.
            if bytes.len() as u64 > size {
                return Err(ToolError::Failed(format!(
                    "{shown} changed while it was read; try again"
                )));
            }
            Ok((format, bytes))
        });
        match attached {
            Ok((format, bytes)) => {
                let url = format!("data:{format};base64,{}", base64(&bytes));
                ctx.images.put(&path, url);
                Ok(format!(
                    "{shown}: {format}, {} bytes; the image follows in the next message",
                    bytes.len()
                ))
            }
            Err(e) => {
                ctx.images.unreserve(&path);
                Err(e)
            }
        }
    }
}

/// The image at `path`, checked: its media type and bytes.
fn read_image(shown: &str, path: &Path) -> Result<(&'static str, Vec<u8>), ToolError> {
    let capped = read_limit::read_path_capped(path, MAX_IMAGE_BYTES)
        .map_err(|refusal| refused(shown, refusal))?;
    if !capped.complete {
        return Err(ToolError::Failed(format!(
            "{shown} is larger than the 5 MiB image limit; scale it down first (for \
             example with ImageMagick: `convert {shown} -resize 50% smaller.png`)"
        )));
    }
    let bytes = capped.bytes;
    let Some(format) = sniff(&bytes) else {
        return Err(ToolError::Failed(format!(
            "{shown} is not a PNG, JPEG, GIF or WebP image (judged by its content, not its \
             name)"
        )));
    };
    Ok((format, bytes))
}

/// What [`Tray::reserve`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reserved {
    /// A place for a new image: read it.
    New,
    /// The file is already attached (or being read) in this round.
    Already,
}

fn refused(shown: &str, refusal: Refusal) -> ToolError {
    ToolError::Failed(match refusal {
        Refusal::Missing => format!("{shown} does not exist; use glob or ls to find it"),
        other => other.describe(shown),
    })
}

/// The media type the file's first bytes announce, if it is one of the four formats every
/// vision model takes.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// How the message carrying a round's images begins: it is the tool's, not a user turn.
const ATTACHMENT_PREFIX: &str = "[view_image: ";

/// Whether `message` is the one [`Tray::take_message`] made: a part of the turn it was
/// made in, not a turn of its own (rewinding, listing and counting turns skip it).
pub fn is_attachment(message: &Message) -> bool {
    message.role == crate::provider::Role::User
        && !message.images.is_empty()
        && message.content.starts_with(ATTACHMENT_PREFIX)
}

/// The images a request already carries, and the most it may: what the round's images must
/// fit beside. The agent fills it from the session ([`crate::config`]'s
/// `agent.max_image_bytes_per_request`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestImages {
    /// Decoded bytes of the history's images.
    pub carried: u64,
    /// The most decoded image bytes one request may carry.
    pub cap: u64,
}

impl Default for RequestImages {
    fn default() -> Self {
        RequestImages {
            carried: 0,
            cap: crate::config::limits::DEFAULT_IMAGE_BYTES_PER_REQUEST,
        }
    }
}

/// The images `view_image` calls of the current round attached, and whether the current model
/// accepts images at all. One per agent (a child agent gets its own), shared by the round's
/// parallel calls.
#[derive(Default)]
pub struct Tray {
    state: Mutex<TrayState>,
}

#[derive(Default)]
struct TrayState {
    /// The model of the round, and whether it is marked `vision = true`.
    model: String,
    vision: bool,
    /// What the history already carries, and the request's cap.
    request: RequestImages,
    /// The round's images in call order: the resolved path, the path as the model wrote it,
    /// the bytes reserved and, once read, the image's `data:` URL.
    images: Vec<Attached>,
}

struct Attached {
    path: PathBuf,
    shown: String,
    bytes: u64,
    url: Option<String>,
}

impl Tray {
    /// Starts a round for `model`, beside the images the request already carries: what a
    /// failed round left behind is dropped.
    pub fn start_round(&self, model: &str, vision: bool, request: RequestImages) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.model.clear();
        state.model.push_str(model);
        state.vision = vision;
        state.request = request;
        state.images.clear();
    }

    fn check_vision(&self) -> Result<(), ToolError> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.vision {
            return Ok(());
        }
        let model = match state.model.as_str() {
            "" => "this model".to_string(),
            name => format!("the model `{name}`"),
        };
        Err(ToolError::Failed(format!(
            "{model} is not marked as accepting images; if it does, set `vision = true` in its \
             `[[providers]]` entry (or `model_overrides.\"<model>\".vision = true`) of the \
             reasonix config, otherwise switch to a vision model"
        )))
    }

    /// Takes a place for the image at `path` (`bytes` on disk) in this round, or refuses it
    /// past [`MAX_IMAGES_PER_ROUND`], [`MAX_ROUND_IMAGE_BYTES`] or the request's budget.
    fn reserve(&self, path: &Path, shown: &str, bytes: u64) -> Result<Reserved, ToolError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.images.iter().any(|image| image.path == path) {
            return Ok(Reserved::Already);
        }
        if state.images.len() >= MAX_IMAGES_PER_ROUND {
            return Err(ToolError::Failed(format!(
                "refused: this round already attaches {MAX_IMAGES_PER_ROUND} images, the most \
                 one round may; look at {shown} in a later round"
            )));
        }
        let taken: u64 = state.images.iter().map(|image| image.bytes).sum();
        if taken.saturating_add(bytes) > MAX_ROUND_IMAGE_BYTES {
            return Err(ToolError::Failed(format!(
                "refused: {shown} ({bytes} bytes) would bring this round's images past {} MiB \
                 together, the most one round may attach; look at it in a later round",
                MAX_ROUND_IMAGE_BYTES / (1024 * 1024)
            )));
        }
        let RequestImages { carried, cap } = state.request;
        let sent = carried.saturating_add(taken).saturating_add(bytes);
        if sent > cap {
            return Err(ToolError::Failed(format!(
                "refused: {shown} ({bytes} bytes) would bring the images every request of this \
                 conversation carries to {sent} bytes, past the {cap} one request may \
                 (agent.max_image_bytes_per_request = {cap}); the images already shown stay \
                 in the conversation, so describe from them or ask for a new conversation"
            )));
        }
        state.images.push(Attached {
            path: path.to_path_buf(),
            shown: shown.to_string(),
            bytes,
            url: None,
        });
        Ok(Reserved::New)
    }

    /// Gives back the place of an image that could not be read.
    fn unreserve(&self, path: &Path) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.images.retain(|image| image.path != path);
    }

    /// The image read for the place reserved at `path`.
    fn put(&self, path: &Path, url: String) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(image) = state.images.iter_mut().find(|image| image.path == path) {
            image.url = Some(url);
        }
    }

    /// The user message that shows the model the round's images, in call order; `None` when
    /// there were none.
    pub fn take_message(&self) -> Option<Message> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let images: Vec<(String, String)> = std::mem::take(&mut state.images)
            .into_iter()
            .filter_map(|image| Some((image.shown, image.url?)))
            .collect();
        if images.is_empty() {
            return None;
        }
        let names: Vec<&str> = images.iter().map(|(shown, _)| shown.as_str()).collect();
        let mut message = Message::user(format!("{ATTACHMENT_PREFIX}{}]", names.join(", ")));
        message.images = images.into_iter().map(|(_, url)| url).collect();
        Some(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_takes_each_file_once_and_refuses_past_its_count_and_bytes() {
        let tray = Tray::default();
        tray.start_round("m", true, RequestImages::default());
        let one = Path::new("/w/one.png");
        assert_eq!(tray.reserve(one, "one.png", 10), Ok(Reserved::New));
        assert_eq!(tray.reserve(one, "one.png", 10), Ok(Reserved::Already));
        let big = Path::new("/w/big.png");
        let err = tray
            .reserve(big, "big.png", MAX_ROUND_IMAGE_BYTES)
            .unwrap_err()
            .to_string();
        assert!(err.contains("past 20 MiB"), "{err}");
        for i in 1..MAX_IMAGES_PER_ROUND {
            let path = PathBuf::from(format!("/w/{i}.png"));
            assert_eq!(tray.reserve(&path, "x", 10), Ok(Reserved::New));
        }
        let err = tray
            .reserve(Path::new("/w/last.png"), "last.png", 10)
            .unwrap_err()
            .to_string();
        assert!(err.contains("already attaches 8 images"), "{err}");
        tray.unreserve(one);
        assert_eq!(tray.reserve(one, "one.png", 10), Ok(Reserved::New));
        tray.start_round("m", true, RequestImages::default());
        assert_eq!(tray.take_message(), None);
    }

    #[test]
    fn images_past_the_requests_budget_are_refused_with_its_key() {
        let tray = Tray::default();
        let request = RequestImages {
            carried: 90,
            cap: 100,
        };
        tray.start_round("m", true, request);
        assert_eq!(
            tray.reserve(Path::new("/w/a.png"), "a.png", 6),
            Ok(Reserved::New)
        );
        let err = tray
            .reserve(Path::new("/w/b.png"), "b.png", 5)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("to 101 bytes") && err.contains("agent.max_image_bytes_per_request = 100"),
            "{err}"
        );
        assert_eq!(
            tray.reserve(Path::new("/w/c.png"), "c.png", 4),
            Ok(Reserved::New),
            "exactly at the cap still fits"
        );
    }

    #[test]
    fn formats_are_judged_by_their_magic_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a..."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff(b"<svg xmlns="), None);
        assert_eq!(sniff(b"\x89PN"), None);
    }

    #[test]
    fn the_tray_hands_over_a_rounds_images_once_and_a_new_round_drops_leftovers() {
        let tray = Tray::default();
        tray.start_round("m", true, RequestImages::default());
        assert!(tray.check_vision().is_ok());
        assert_eq!(tray.take_message(), None);
        for (path, url) in [
            ("a.png", "data:image/png;base64,AA=="),
            ("b.gif", "data:image/gif;base64,BB=="),
        ] {
            let path = Path::new(path);
            assert_eq!(
                tray.reserve(path, &path.display().to_string(), 4),
                Ok(Reserved::New)
            );
            tray.put(path, url.into());
        }
        let message = tray.take_message().unwrap();
        assert_eq!(message.content, "[view_image: a.png, b.gif]");
        assert_eq!(message.images.len(), 2);
        assert!(is_attachment(&message));
        assert!(!is_attachment(&Message::user(
            "[view_image: typed by a person]"
        )));
        assert_eq!(tray.take_message(), None);
        tray.reserve(Path::new("c.png"), "c.png", 1).unwrap();
        tray.put(Path::new("c.png"), "x".into());
        tray.start_round("text-only", false, RequestImages::default());
        assert_eq!(tray.take_message(), None);
        let err = tray.check_vision().unwrap_err().to_string();
        assert!(
            err.contains("`text-only`") && err.contains("vision = true"),
            "{err}"
        );
    }
}
