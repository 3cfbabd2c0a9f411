package openaiwire

// Done is the data of a stream's last frame. OpenAI's streams (and Azure
// OpenAI's) are data-only server-sent events: each chunk one "data:" line,
// no "event:" or "id:" lines (a data-less "event:" line breaks
// openai-node's parser), silence broken by SSE comments, and "data:
// [DONE]" at the end. A failure after the first chunk is one frame holding
// an ErrorBody, and the stream ends there.
const Done = "[DONE]"
