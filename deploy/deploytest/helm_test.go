package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = repoRoot + "/deploy/helm/mio"

// kubeVersion is the cluster the chart is rendered for (the chart needs
// ≥ 1.25; Helm's offline default is older).
const kubeVersion = "v1.31.0"

// rendered is a chart rendered by Helm and decoded into k8s.io/api types.
type rendered struct {
	manifest    string // every document, hooks included
	configMaps  []*corev1.ConfigMap
	services    []*corev1.Service
	deployments map[string]*appsv1.Deployment // by component label
	jobs        []*batchv1.Job
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	ingresses   []*networkingv1.Ingress
	netpols     []*networkingv1.NetworkPolicy
	monitors    []*monitoringv1.ServiceMonitor
}

// renderChart renders the chart as `helm install --dry-run` would, with
// the values of valuesYAML over the chart's, and decodes every object
// strictly: a field Kubernetes does not know fails the test.
func renderChart(t *testing.T, valuesYAML string) (*rendered, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir)
	require.NoError(t, err)
	vals, err := chartutil.ReadValues([]byte(valuesYAML))
	require.NoError(t, err)
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "prod", "mio"
	inst.KubeVersion, err = chartutil.ParseKubeVersion(kubeVersion)
	require.NoError(t, err)
	rel, err := inst.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	docs := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		docs = append(docs, h.Manifest)
	}
	r := &rendered{manifest: strings.Join(docs, "\n---\n"), deployments: map[string]*appsv1.Deployment{}}
	for _, doc := range releaseutil.SplitManifests(r.manifest) {
		var head struct{ APIVersion, Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &head))
		if head.Kind == "" {
			continue // an empty document
		}
		strict := func(obj any) {
			t.Helper()
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "%s:\n%s", head.Kind, doc)
		}
		switch head.APIVersion + " " + head.Kind {
		case "v1 ConfigMap":
			o := new(corev1.ConfigMap)
			strict(o)
			r.configMaps = append(r.configMaps, o)
		case "v1 Service":
			o := new(corev1.Service)
			strict(o)
			r.services = append(r.services, o)
		case "apps/v1 Deployment":
			o := new(appsv1.Deployment)
			strict(o)
			role := o.Labels["app.kubernetes.io/component"]
			require.NotContains(t, r.deployments, role)
			r.deployments[role] = o
		case "batch/v1 Job":
			o := new(batchv1.Job)
			strict(o)
			r.jobs = append(r.jobs, o)
		case "autoscaling/v2 HorizontalPodAutoscaler":
			o := new(autoscalingv2.HorizontalPodAutoscaler)
			strict(o)
			r.hpas = append(r.hpas, o)
		case "policy/v1 PodDisruptionBudget":
			o := new(policyv1.PodDisruptionBudget)
			strict(o)
			r.pdbs = append(r.pdbs, o)
		case "networking.k8s.io/v1 Ingress":
			o := new(networkingv1.Ingress)
			strict(o)
			r.ingresses = append(r.ingresses, o)
		case "networking.k8s.io/v1 NetworkPolicy":
			o := new(networkingv1.NetworkPolicy)
			strict(o)
			r.netpols = append(r.netpols, o)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			o := new(monitoringv1.ServiceMonitor)
			strict(o)
			r.monitors = append(r.monitors, o)
		default:
			t.Fatalf("unexpected object %s %s (a Secret? the chart never renders one)", head.APIVersion, head.Kind)
		}
	}
	return r, nil
}

// configEnvNames are the MIO_* variables config/config.go reads (read as
// text: this module imports no MIO package).
func configEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "config", "config.go"))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`"(MIO_[A-Z0-9_]+)"`).FindAllStringSubmatch(string(b), -1) {
		names[m[1]] = true
	}
	require.Contains(t, names, "MIO_DATABASE_URL")
	return names
}

const minimalValues = `
existingSecret: {name: mio-secrets}
`

const fullValues = `
image: {repository: registry.example.com/mio, tag: v1.2.3}
existingSecret: {name: mio-prod, databaseURLKey: db, masterKeyKey: key, natsURLKey: nats, databaseListenURLKey: db-direct, migrationDatabaseURLKey: db-owner}
config:
  MIO_PUBLIC_URL: https://mio.example.com
  MIO_BLOB_URL: gs://mio-blobs/prod
  MIO_DB_MAX_CONNS: 40
  MIO_LOG_LEVEL: debug
api:
  autoscaling: {enabled: false}
  replicas: 3
worker: {replicas: 4, pdb: {enabled: false}}
bridge: {replicas: 1}
ingress:
  enabled: true
  className: nginx
  hosts: [{host: mio.example.com, paths: [{path: /, pathType: Prefix}]}]
  tls: [{secretName: mio-tls, hosts: [mio.example.com]}]
serviceMonitor: {enabled: true, labels: {release: kube-prometheus}}
networkPolicy: {enabled: true, monitoringNamespace: observability}
`

// TestHelmChart renders the chart with several values sets and checks
// each Kubernetes object decoded into its k8s.io/api type.
func TestHelmChart(t *testing.T) {
	known := configEnvNames(t)
	for _, tc := range []struct {
		name, values string
		roles        []string
	}{
		{"Minimal", minimalValues, []string{"api", "worker"}},
		{"Full", fullValues, []string{"api", "worker", "bridge"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renderChart(t, tc.values)
			require.NoError(t, err)
			vals, err := chartutil.ReadValues([]byte(tc.values))
			require.NoError(t, err)
			secretName, _ := vals.PathValue("existingSecret.name")

			// No secret value anywhere: only references to existingSecret.
			require.NotContains(t, r.manifest, "postgres://")
			require.Len(t, r.configMaps, 1)
			cm := r.configMaps[0]
			for k := range cm.Data {
				require.True(t, known[k], "ConfigMap key %s is not a MIO setting (config/config.go)", k)
				require.NotContains(t, []string{"MIO_DATABASE_URL", "MIO_DATABASE_LISTEN_URL", "MIO_MASTER_KEY", "MIO_NATS_URL"}, k)
			}
			require.Equal(t, ":8080", cm.Data["MIO_HTTP_ADDR"])
			require.Equal(t, ":9090", cm.Data["MIO_ADMIN_ADDR"])

			// Migration: a pre-install,pre-upgrade hook running mio migrate up.
			require.Len(t, r.jobs, 1)
			job := r.jobs[0]
			require.Equal(t, "pre-install,pre-upgrade", job.Annotations["helm.sh/hook"])
			require.Contains(t, job.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation")
			require.Equal(t, corev1.RestartPolicyNever, job.Spec.Template.Spec.RestartPolicy)
			jc := job.Spec.Template.Spec.Containers[0]
			require.Equal(t, []string{"migrate", "up"}, jc.Args)
			require.Empty(t, jc.EnvFrom, "the hook runs before the chart's ConfigMap exists")
			checkPod(t, job.Spec.Template.Spec, secretName.(string), known)
			for _, e := range jc.Env {
				require.NotContains(t, []string{"MIO_MASTER_KEY", "MIO_NATS_URL", "MIO_DATABASE_LISTEN_URL"}, e.Name, "the migration needs the database URL only")
			}

			require.ElementsMatch(t, tc.roles, slices.Collect(mapsKeys(r.deployments)))
			for role, d := range r.deployments {
				spec := d.Spec.Template.Spec
				checkPod(t, spec, secretName.(string), known)
				c := spec.Containers[0]
				requireSecretEnv(t, c, "MIO_MASTER_KEY", secretName.(string))
				if tc.name == "Full" {
					requireSecretEnv(t, c, "MIO_DATABASE_LISTEN_URL", secretName.(string))
				}
				if role != "bridge" {
					require.False(t, slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "MIO_NATS_URL" }), "only the bridge gets the NATS credentials")
				}
				require.Equal(t, []string{"serve", "--role", role}, c.Args)
				require.Equal(t, cm.Name, c.EnvFrom[0].ConfigMapRef.Name)
				port := "admin"
				if role == "api" {
					port = "http"
				}
				require.Equal(t, "/livez", c.LivenessProbe.HTTPGet.Path, role)
				require.Equal(t, port, c.LivenessProbe.HTTPGet.Port.String(), role)
				require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, role)
				require.Equal(t, port, c.ReadinessProbe.HTTPGet.Port.String(), role)
				require.NotEmpty(t, c.Resources.Requests, role)
				require.NotEmpty(t, c.Resources.Limits, role)
				require.Equal(t, d.Spec.Selector.MatchLabels, filterLabels(d.Spec.Template.Labels, d.Spec.Selector.MatchLabels), role)
			}
			if b, ok := r.deployments["bridge"]; ok {
				require.Equal(t, int32(1), *b.Spec.Replicas)
				requireSecretEnv(t, b.Spec.Template.Spec.Containers[0], "MIO_NATS_URL", secretName.(string))
			}

			// Services: public (api pods) and admin (every pod).
			require.Len(t, r.services, 2)
			for _, s := range r.services {
				require.Equal(t, corev1.ServiceTypeClusterIP, s.Spec.Type)
				require.Len(t, s.Spec.Ports, 1)
			}

			if tc.name == "Minimal" {
				require.Len(t, r.hpas, 1)
				require.Nil(t, r.deployments["api"].Spec.Replicas, "the HPA owns the api replica count")
				require.Equal(t, "prod-mio-api", r.hpas[0].Spec.ScaleTargetRef.Name)
				require.Len(t, r.pdbs, 2)
				require.Empty(t, r.ingresses)
				require.Empty(t, r.monitors)
				require.Empty(t, r.netpols)
				require.Equal(t, "mio:0.1.0", r.deployments["api"].Spec.Template.Spec.Containers[0].Image)
				require.Equal(t, "database-url", jc.Env[0].ValueFrom.SecretKeyRef.Key)
				return
			}
			require.Empty(t, r.hpas)
			require.Equal(t, int32(3), *r.deployments["api"].Spec.Replicas)
			require.Len(t, r.pdbs, 1, "the worker's PDB is disabled")
			require.Equal(t, "registry.example.com/mio:v1.2.3", job.Spec.Template.Spec.Containers[0].Image)
			require.Equal(t, "db-owner", jc.Env[0].ValueFrom.SecretKeyRef.Key, "the migration connects as the owner")
			require.Equal(t, "db", r.deployments["api"].Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Key)
			require.Equal(t, "40", cm.Data["MIO_DB_MAX_CONNS"])
			require.Len(t, r.ingresses, 1)
			require.Equal(t, "http", r.ingresses[0].Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name)
			require.Len(t, r.monitors, 1)
			require.Equal(t, "admin", r.monitors[0].Spec.Endpoints[0].Port)
			require.Equal(t, "/metrics", r.monitors[0].Spec.Endpoints[0].Path)
			require.Len(t, r.netpols, 1)
			np := r.netpols[0]
			require.Len(t, np.Spec.Ingress, 2)
			for _, rule := range np.Spec.Ingress {
				require.Len(t, rule.Ports, 1)
				if rule.Ports[0].Port.String() == "admin" {
					require.Len(t, rule.From, 1)
					require.Equal(t, map[string]string{"kubernetes.io/metadata.name": "observability"}, rule.From[0].NamespaceSelector.MatchLabels)
				} else {
					require.Equal(t, "http", rule.Ports[0].Port.String())
					require.Empty(t, rule.From, "webhooks come from anywhere")
				}
			}
		})
	}
}

// TestHelmChartRefuses: values that cannot work fail the render with a
// reason, and a secret put in config is refused rather than rendered.
func TestHelmChartRefuses(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"NoSecret", `{}`, "existingSecret.name is required"},
		{"DatabaseURLInConfig", minimalValues + "config: {MIO_DATABASE_URL: postgres://u:p@db/mio}", "config.MIO_DATABASE_URL is a secret"},
		{"ListenURLInConfig", minimalValues + "config: {MIO_DATABASE_LISTEN_URL: postgres://u:p@db/mio}", "config.MIO_DATABASE_LISTEN_URL is a secret"},
		{"MasterKeyInConfig", minimalValues + "config: {MIO_MASTER_KEY: c2VjcmV0}", "config.MIO_MASTER_KEY is a secret"},
		{"RoleInConfig", minimalValues + "config: {MIO_ROLE: api}", "set by the chart"},
		{"NotMIO", minimalValues + "config: {HTTP_PROXY: x}", "only MIO_*"},
		{"TwoBridges", `{existingSecret: {name: s, natsURLKey: n}, bridge: {replicas: 2}}`, "bridge.replicas must be 0 or 1"},
		{"BridgeWithoutNATS", minimalValues + "bridge: {replicas: 1}", "needs existingSecret.natsURLKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderChart(t, tc.values)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestHelmLint: `helm lint --strict` has nothing to say.
func TestHelmLint(t *testing.T) {
	vals, err := chartutil.ReadValues([]byte(minimalValues))
	require.NoError(t, err)
	lint := action.NewLint()
	lint.Strict = true
	lint.KubeVersion, err = chartutil.ParseKubeVersion(kubeVersion)
	require.NoError(t, err)
	res := lint.Run([]string{chartDir}, vals)
	for _, m := range res.Messages {
		t.Log(m)
	}
	require.Empty(t, res.Errors)
	require.False(t, action.HasWarningsOrErrors(res))
}

// checkPod: a restricted security context (non-root, read-only root
// filesystem, no privilege escalation, every capability dropped, no
// service-account token), only MIO's settings in the environment, and
// secrets only by reference to the existing Secret.
func checkPod(t *testing.T, spec corev1.PodSpec, secretName string, known map[string]bool) {
	t.Helper()
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot)
	require.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.NotZero(t, *spec.SecurityContext.RunAsUser)
	require.False(t, *spec.AutomountServiceAccountToken)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	sc := c.SecurityContext
	require.NotNil(t, sc)
	require.True(t, *sc.RunAsNonRoot)
	require.True(t, *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Empty(t, sc.Capabilities.Add)
	for _, e := range c.Env {
		require.True(t, known[e.Name], "env %s is not a MIO setting (config/config.go)", e.Name)
	}
	requireSecretEnv(t, c, "MIO_DATABASE_URL", secretName)
}

func requireSecretEnv(t *testing.T, c corev1.Container, name, secretName string) {
	t.Helper()
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	require.GreaterOrEqual(t, i, 0, "%s is set", name)
	e := c.Env[i]
	require.Empty(t, e.Value, "%s never has a literal value", name)
	require.NotNil(t, e.ValueFrom.SecretKeyRef, name)
	require.Equal(t, secretName, e.ValueFrom.SecretKeyRef.Name, name)
}

func filterLabels(labels, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := labels[k]; ok {
			out[k] = v
		}
	}
	return out
}

func mapsKeys[M ~map[K]V, K comparable, V any](m M) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
