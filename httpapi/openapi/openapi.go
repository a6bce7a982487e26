// Package openapi holds the OpenAPI 3.1 documents of MIO's two HTTP
// listeners, written by hand in YAML next to this file and served as
// JSON: Public (webhooks, probes and the agent API /v1) at
// GET /v1/openapi.json, Admin (the operator API /admin/v1, probes and
// /metrics) at GET /admin/v1/openapi.json.
//
// The documents are the contract the tests hold the code to: httpapi's
// tests fail when a route is missing from its document or the reverse,
// and validate the API tests' responses against them.
package openapi

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

//go:embed v1.yaml admin.yaml
var files embed.FS

// Document names a document.
type Document string

// The documents.
const (
	Public Document = "v1.yaml"
	Admin  Document = "admin.yaml"
)

// YAML returns the document as written.
func (d Document) YAML() ([]byte, error) {
	b, err := files.ReadFile(string(d))
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return b, nil
}

// JSON returns the document converted to JSON (YAML anchors resolved),
// with channelTypes (the channel registry's slugs) as the enum of the
// ChannelType schema: the YAML names no channel. Without channel types
// the schema keeps only the slug's pattern.
func (d Document) JSON(channelTypes []string) ([]byte, error) {
	b, err := d.YAML()
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", d, err)
	}
	v, err = jsonable(v)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", d, err)
	}
	if err := fillChannelTypes(v, channelTypes); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", d, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", d, err)
	}
	return out, nil
}

// fillChannelTypes sets the enum of components.schemas.ChannelType.
func fillChannelTypes(doc any, channelTypes []string) error {
	schemas, _ := dig(doc, "components", "schemas").(map[string]any)
	ct, ok := schemas["ChannelType"].(map[string]any)
	if !ok {
		return errors.New("no components.schemas.ChannelType")
	}
	if len(channelTypes) == 0 {
		return nil
	}
	enum := make([]any, len(channelTypes))
	for i, t := range channelTypes {
		enum[i] = t
	}
	ct["enum"] = enum
	return nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// jsonable turns YAML's decoded values into ones encoding/json accepts:
// mappings with non-string keys (an unquoted 200) become string-keyed.
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			v[k] = c
		}
		return v, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = c
		}
		return m, nil
	case []any:
		for i, e := range v {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			v[i] = c
		}
		return v, nil
	}
	return v, nil
}
