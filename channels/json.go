package channels

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// UnmarshalJSON decodes a webhook body (or a part of one) into v with
// github.com/go-json-experiment/json (encoding/json/v2's implementation),
// set to accept exactly what encoding/json.Unmarshal accepts: duplicate
// names (the last wins), invalid UTF-8 (adapters check the body first),
// and names matched case-insensitively, as strings.EqualFold does (v2's
// case-insensitive match also ignores '_' and '-': "_team" would fill
// team_id's field; the fuzzer found it). It decodes in one pass where
// encoding/json validates the whole input first and then decodes it: the
// Slack adapter's parse took 56 % of the webhook handler's CPU with
// encoding/json (mio-bench ingest, pprof). The decoded values are
// the same (each adapter's FuzzDecodeLikeEncodingJSON, through
// channelstest.CheckDecodesLikeEncodingJSON); error texts differ.
func UnmarshalJSON(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v,
		jsontext.AllowDuplicateNames(true),
		jsontext.AllowInvalidUTF8(true),
		jsonv2.MatchCaseInsensitiveNames(true),
		jsonv1.MatchCaseSensitiveDelimiter(true))
}
