package workers_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/miohq/mio/envelope"
)

var updateSchema = flag.Bool("update", false, "rewrite deploy/bigquery/messages_schema.json from the envelope type")

// schemaPath is the committed BigQuery schema contract of the archive.
const schemaPath = "../deploy/bigquery/messages_schema.json"

// bqField is one field of a BigQuery JSON schema.
type bqField struct {
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Mode        string    `json:"mode"`
	Description string    `json:"description,omitempty"`
	Fields      []bqField `json:"fields,omitempty"`
}

var (
	timeType = reflect.TypeFor[time.Time]()
	uuidType = reflect.TypeFor[uuid.UUID]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schemaOf derives the BigQuery schema of a struct from its JSON tags:
// omitempty fields are NULLABLE, others REQUIRED (the archive always
// writes them), slices REPEATED; uuid.UUID is STRING, time.Time TIMESTAMP,
// json.RawMessage JSON, structs RECORD.
func schemaOf(t reflect.Type) []bqField {
	var out []bqField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		field := bqField{Name: name, Mode: "REQUIRED"}
		if strings.Contains(opts, "omitempty") {
			field.Mode = "NULLABLE"
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft, field.Mode = ft.Elem(), "NULLABLE"
		}
		if ft.Kind() == reflect.Slice && ft != rawType {
			ft, field.Mode = ft.Elem(), "REPEATED"
		}
		switch {
		case ft == timeType:
			field.Type = "TIMESTAMP"
		case ft == uuidType:
			field.Type = "STRING"
		case ft == rawType:
			field.Type = "JSON"
		case ft.Kind() == reflect.String:
			field.Type = "STRING"
		case ft.Kind() == reflect.Bool:
			field.Type = "BOOLEAN"
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			field.Type = "INTEGER"
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			field.Type = "FLOAT"
		case ft.Kind() == reflect.Struct:
			field.Type, field.Fields = "RECORD", schemaOf(ft)
		default:
			panic(fmt.Sprintf("schema: no BigQuery type for %s.%s (%s)", t.Name(), f.Name, ft))
		}
		out = append(out, field)
	}
	return out
}

func loadSchema(t testing.TB) []bqField {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	var fields []bqField
	require.NoError(t, json.Unmarshal(b, &fields))
	return fields
}

// stripDescriptions drops descriptions (free text kept in the file).
func stripDescriptions(fs []bqField) []bqField {
	out := make([]bqField, len(fs))
	for i, f := range fs {
		f.Description = ""
		f.Fields = stripDescriptions(f.Fields)
		out[i] = f
	}
	return out
}

// TestMessagesSchema fails when the envelope and messages_schema.json
// disagree: a field added to envelope.Message without the schema (or the
// reverse) fails CI. `go test ./workers -run TestMessagesSchema -update`
// rewrites the file, keeping existing descriptions.
func TestMessagesSchema(t *testing.T) {
	want := schemaOf(reflect.TypeFor[envelope.Message]())
	if *updateSchema {
		var old []bqField
		if b, err := os.ReadFile(schemaPath); err == nil {
			_ = json.Unmarshal(b, &old)
		}
		keepDescriptions(want, old)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(want))
		require.NoError(t, os.WriteFile(schemaPath, buf.Bytes(), 0o644))
		return
	}
	require.Equal(t, stripDescriptions(want), stripDescriptions(loadSchema(t)),
		"deploy/bigquery/messages_schema.json is out of date with envelope.Message: run go test ./workers -run TestMessagesSchema -update, then update the BigQuery DDL")
}

func keepDescriptions(fs, old []bqField) {
	for i := range fs {
		for _, o := range old {
			if o.Name == fs[i].Name {
				fs[i].Description = o.Description
				keepDescriptions(fs[i].Fields, o.Fields)
			}
		}
	}
}

// checkLine asserts an NDJSON line's keys and value kinds match the
// schema, and that every REQUIRED field is present.
func checkLine(t testing.TB, fields []bqField, obj map[string]any, path string) {
	t.Helper()
	byName := map[string]bqField{}
	for _, f := range fields {
		byName[f.Name] = f
		if f.Mode == "REQUIRED" {
			_, ok := obj[f.Name]
			require.True(t, ok, "%s%s is REQUIRED but missing", path, f.Name)
		}
	}
	for k, v := range obj {
		f, ok := byName[k]
		require.True(t, ok, "key %s%s is not in messages_schema.json", path, k)
		if v == nil {
			require.NotEqual(t, "REQUIRED", f.Mode, "%s%s is null", path, k)
			continue
		}
		if f.Mode == "REPEATED" {
			arr, ok := v.([]any)
			require.True(t, ok, "%s%s: want an array", path, k)
			for i, e := range arr {
				checkValue(t, f, e, fmt.Sprintf("%s%s[%d].", path, k, i))
			}
			continue
		}
		checkValue(t, f, v, path+k+".")
	}
}

func checkValue(t testing.TB, f bqField, v any, path string) {
	t.Helper()
	switch f.Type {
	case "STRING":
		require.IsType(t, "", v, path)
	case "BOOLEAN":
		require.IsType(t, true, v, path)
	case "INTEGER":
		require.IsType(t, float64(0), v, path)
	case "TIMESTAMP":
		s, ok := v.(string)
		require.True(t, ok, path)
		_, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err, path)
		frac := strings.TrimSuffix(s[strings.LastIndexByte(s, ':')+1:], "Z")
		require.LessOrEqual(t, len(frac), len("00.000000"), "%s: BigQuery keeps microseconds: %s", path, s)
	case "RECORD":
		obj, ok := v.(map[string]any)
		require.True(t, ok, path)
		checkLine(t, f.Fields, obj, path)
	case "JSON":
	default:
		t.Fatalf("%s: unknown type %s", path, f.Type)
	}
}
