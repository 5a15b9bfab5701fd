// Package api serves momopay's public JSON API under /v1: API-key
// authentication, the contract's error envelope, request ids, body limits,
// and the OpenAPI document. Handlers translate HTTP to calls on
// payment.Service and back; they hold no business rules.
package api
