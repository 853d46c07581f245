package probe

// InNamespaceForTest runs f with its thread in the named namespace.
var InNamespaceForTest = inNamespace
