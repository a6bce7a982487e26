package config

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

// files serves readFile from a map; a missing name is fs.ErrNotExist.
func files(m map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if v, ok := m[name]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestRuntimeSettings(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		env   map[string]string
		files map[string]string
		want  Runtime
	}{
		{name: "no cgroup files", want: Runtime{GCPercent: DefaultGCPercent}},
		{name: "cgroup v2 without a limit",
			files: map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "max\n"},
			want:  Runtime{GCPercent: DefaultGCPercent}},
		{name: "cgroup v2 container limit",
			files: map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "268435456\n"},
			want:  Runtime{GCPercent: DefaultGCPercent, CgroupLimit: 256 * mib, MemoryLimit: 256 * mib * 8 / 10}},
		{name: "cgroup v2 service under a tighter parent",
			files: map[string]string{"/proc/self/cgroup": "0::/system.slice/mio.service\n",
				"/sys/fs/cgroup/system.slice/mio.service/memory.max": "max\n",
				"/sys/fs/cgroup/system.slice/memory.max":             "536870912\n",
				"/sys/fs/cgroup/memory.max":                          "1073741824\n"},
			want: Runtime{GCPercent: DefaultGCPercent, CgroupLimit: 512 * mib, MemoryLimit: 512 * mib * 8 / 10}},
		{name: "cgroup v1 unlimited (hybrid host)",
			files: map[string]string{"/proc/self/cgroup": "4:memory:/process_api/x\n0::/\n",
				"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"},
			want: Runtime{GCPercent: DefaultGCPercent}},
		{name: "cgroup v1 container limit",
			files: map[string]string{"/proc/self/cgroup": "12:cpu,memory:/docker/abc\n",
				"/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824"},
			want: Runtime{GCPercent: DefaultGCPercent, CgroupLimit: 1024 * mib, MemoryLimit: 1024 * mib * 8 / 10}},
		{name: "unreadable limit is no limit",
			files: map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "lots\n"},
			want:  Runtime{GCPercent: DefaultGCPercent}},
		{name: "operator's GOGC and GOMEMLIMIT are left alone",
			env:   map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"},
			files: map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "268435456\n"},
			want:  Runtime{OperatorGOGC: true, OperatorGOMEMLIMIT: true}},
		{name: "operator's GOGC with a container limit",
			env:   map[string]string{"GOGC": "100"},
			files: map[string]string{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "268435456\n"},
			want:  Runtime{OperatorGOGC: true, CgroupLimit: 256 * mib, MemoryLimit: 256 * mib * 8 / 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := RuntimeSettings(envMap(tc.env), files(tc.files))
			require.Equal(t, tc.want, got)
			require.NotEmpty(t, got.String())
		})
	}
}

func TestRuntimeString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "GOGC=400 (MIO's default), no memory limit (no cgroup memory limit found)",
		Runtime{GCPercent: 400}.String())
	require.Equal(t, "GOGC from the environment, memory limit 204 MiB (80% of the cgroup's 256 MiB)",
		Runtime{OperatorGOGC: true, CgroupLimit: 256 << 20, MemoryLimit: 214748364}.String())
	require.Equal(t, "GOGC=400 (MIO's default), GOMEMLIMIT from the environment",
		Runtime{GCPercent: 400, OperatorGOMEMLIMIT: true}.String())
}
