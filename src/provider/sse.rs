//! Sans-IO decoder for `text/event-stream` (WHATWG rules).
