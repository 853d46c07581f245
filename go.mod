module github.com/netagent-io/netagent

go 1.26

require (
	github.com/google/btree v1.1.3
	go.uber.org/goleak v1.3.0
	google.golang.org/protobuf v1.36.12
	pgregory.net/rapid v1.2.0
)

require (
	github.com/prometheus/client_golang v1.20.5 // indirect
	sigs.k8s.io/yaml v1.4.0 // indirect
)
