package channels

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/miohq/mio/envelope"
)

// MediaTypeJSON is the media type of every webhook body MIO's adapters
// accept today.
const MediaTypeJSON = "application/json"

// CheckContentType applies MIO's one Content-Type rule for webhook bodies;
// mediaType is the type the adapter reads (MediaTypeJSON for all six; a
// platform that posts another type, such as form-encoded Slack slash
// commands, passes that type instead).
//
// The body is accepted when the header is absent or blank, or when it
// parses (mime.ParseMediaType: type and parameter names are
// case-insensitive) to mediaType with no charset parameter or a UTF-8 one
// ("utf-8" or "utf8", any case); other parameters are ignored. JSON is
// UTF-8 (RFC 8259 §8.1) and every platform MIO speaks sends
// "application/json" or "application/json; charset=utf-8" (channels.md), so
// a body declared in another charset would be misread, and a header that
// does not parse, a malformed parameter included, says nothing reliable.
// Anything else is an error wrapping ErrUnsupportedMediaType (HTTP 415);
// callers prefix it with their slug.
func CheckContentType(h http.Header, mediaType string) error {
	ct := strings.TrimSpace(h.Get("Content-Type"))
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return fmt.Errorf("%w: malformed Content-Type %.100q", ErrUnsupportedMediaType, ct)
	case mt != mediaType:
		return fmt.Errorf("%w: Content-Type %.100q, want %s", ErrUnsupportedMediaType, mt, mediaType)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return fmt.Errorf("%w: charset %.40q, want utf-8", ErrUnsupportedMediaType, cs)
	}
	return nil
}

// AttachmentKind is the envelope attachment kind of a MIME type:
// envelope.KindImage, KindVideo or KindAudio for image/*, video/* and
// audio/*, compared case-insensitively and ignoring parameters
// ("Image/PNG" is an image); anything else, an empty or unparsable type
// included, is envelope.KindFile.
func AttachmentKind(mimeType string) string {
	mt, _, err := mime.ParseMediaType(mimeType)
	if err != nil {
		// "image/" does not parse but still names its top-level type.
		mt = strings.ToLower(strings.TrimSpace(mimeType))
	}
	switch {
	case strings.HasPrefix(mt, "image/"):
		return envelope.KindImage
	case strings.HasPrefix(mt, "video/"):
		return envelope.KindVideo
	case strings.HasPrefix(mt, "audio/"):
		return envelope.KindAudio
	default:
		return envelope.KindFile
	}
}
