package bench

import (
	"slices"
	"testing"
)

func TestTracingEnv(t *testing.T) {
	env, err := TracingEnv("parentbased_traceidratio:0.01", "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.01",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"} {
		if !slices.Contains(env, want) {
			t.Errorf("%v lacks %s", env, want)
		}
	}
	if env, _ := TracingEnv("off", "x"); !slices.Contains(env, "OTEL_SDK_DISABLED=true") {
		t.Errorf("off: %v", env)
	}
	if _, err := TracingEnv("sometimes", "x"); err == nil {
		t.Error("an unknown sampler was accepted")
	}
}
