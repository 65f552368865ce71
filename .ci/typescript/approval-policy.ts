// Compiled by .ci/run against the client types that openapi-typescript
// generates from the served OpenAPI document (./api.d.ts), like
// create-group.ts: patchd's additions (approval policy,
// decisions about CVEs, remediation periods) must give a usable client.
import type { components, paths } from "./api";

type ApprovalPolicy = paths["/api/v1/approval-policy"]["get"]["responses"][200]["content"]["application/json"];
type ApprovalPolicyBody = paths["/api/v1/approval-policy"]["put"]["requestBody"]["content"]["application/json"];
type ExceptionBody = paths["/api/v1/vulnerabilities/{cve}/exception"]["post"]["requestBody"]["content"]["application/json"];
type Exceptions = paths["/api/v1/vulnerability-exceptions"]["get"]["responses"][200]["content"]["application/json"];
type RemediationPolicy = components["schemas"]["RemediationPolicy"];
type ApiError = components["schemas"]["Error"];

async function call<T>(server: string, token: string, method: string, path: string, body?: unknown): Promise<T> {
  const resp = await fetch(`${server}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!resp.ok) {
    const err = (await resp.json()) as ApiError;
    throw new Error(`${resp.status} ${err.error}: ${err.error_description ?? ""}`);
  }
  return (await resp.json()) as T;
}

export function getApprovalPolicy(server: string, token: string): Promise<ApprovalPolicy> {
  return call<ApprovalPolicy>(server, token, "GET", "/api/v1/approval-policy");
}

export function setApprovalPolicy(server: string, token: string, body: ApprovalPolicyBody): Promise<ApprovalPolicy> {
  return call<ApprovalPolicy>(server, token, "PUT", "/api/v1/approval-policy", body);
}

// Critical OS updates at once, third-party ones after a week.
export const policy: ApprovalPolicyBody = {
  declineOlder: true,
  rules: [
    { severity: "Critical", source: "OS", delayDays: 0 },
    { severity: "ANY", source: "THIRD_PARTY", delayDays: 7 },
  ],
};

// @ts-expect-error the body replaces the whole policy: rules are required
export const noRules: ApprovalPolicyBody = { declineOlder: false };

export async function criticalDelay(server: string, token: string): Promise<number | undefined> {
  const p = await getApprovalPolicy(server, token);
  return p.rules.find((r) => r.severity === "Critical")?.delayDays;
}

export const control: ExceptionBody = { kind: "compensating_control", reason: "behind the VPN only", validDays: 90 };
// @ts-expect-error kind is accepted or compensating_control
export const ignored: ExceptionBody = { kind: "ignored", reason: "no" };

// expiresAt is a string or null, never absent.
export function expired(list: Exceptions): string[] {
  return list.items.filter((x) => !x.active && x.expiresAt !== null).map((x) => x.cveId);
}

export const periods: RemediationPolicy = { criticalDays: 7, highDays: 30, mediumDays: 90, lowDays: 180 };
