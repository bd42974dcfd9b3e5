"""The real Kubernetes control plane under the tests (envtest style): `_plane` starts it from
`$KUBEBUILDER_ASSETS`, `_kubelet` plays the kubelet of each test node, `cluster.RealCluster`
is a test's cluster on it, `fixtures` holds the pytest fixtures (`control_plane`, `kube`)."""
