package main

// The token guards the requests and calls that change state: REST requests
// other than GET and HEAD, the Update and Delete of both configurators
// (netagent's and the original's ConfiguratorService) and the original's
// ManagerService.SetConfig: by method name.

import (
	"context"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// validToken tells whether an Authorization header presents the token (in
// constant time).
func validToken(token Secret, header string) bool {
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && token.Matches(got)
}

// requireToken guards the REST requests that change state (not GET/HEAD).
func requireToken(token Secret, h http.Handler) http.Handler {
	if !token.IsSet() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !validToken(token, r.Header.Get("Authorization")) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="netagent"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "this request changes state: send Authorization: Bearer <token>"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// changing lists the gRPC methods that change state.
func changing(fullMethod string) bool {
	return strings.HasSuffix(fullMethod, "/Update") || strings.HasSuffix(fullMethod, "/Delete") || strings.HasSuffix(fullMethod, "/SetConfig") ||
		strings.HasSuffix(fullMethod, "/Confirm")
}

func checkToken(ctx context.Context, token Secret, method string) error {
	if !token.IsSet() || !changing(method) {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if validToken(token, v) {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "this call changes state: send the metadata authorization: Bearer <token>")
}

func tokenUnary(token Secret) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := checkToken(ctx, token, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func tokenStream(token Secret) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := checkToken(ss.Context(), token, info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}
