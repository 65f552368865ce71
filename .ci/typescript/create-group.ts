// Compiled by .ci/run against the client types that openapi-typescript
// generates from the served OpenAPI document (./api.d.ts, written next to a
// copy of this file in a temporary folder). It fails to compile when the
// document makes a generated client unusable, as GroupBody once did (every
// field of create-group typed `never`).
import type { components, paths } from "./api";

type CreateGroupBody = paths["/api/v1/groups"]["post"]["requestBody"]["content"]["application/json"];
type CreateGroupAnswer = paths["/api/v1/groups"]["post"]["responses"][200]["content"]["application/json"];
type PatchGroupBody = paths["/api/v1/groups/{id}"]["patch"]["requestBody"]["content"]["application/json"];
type ApiError = components["schemas"]["Error"];

export async function createGroup(server: string, token: string, body: CreateGroupBody): Promise<CreateGroupAnswer> {
  const resp = await fetch(`${server}/api/v1/groups`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!resp.ok) {
    const err = (await resp.json()) as ApiError;
    throw new Error(`${resp.status} ${err.error}: ${err.error_description ?? ""}`);
  }
  return (await resp.json()) as CreateGroupAnswer;
}

export const staticGroup: CreateGroupBody = {
  name: "Databases",
  description: "database servers",
  machineIds: ["m-1", "m-2"],
  offlineAlertMinutes: 30,
  onlineAlert: true,
};

export const dynamicGroup: CreateGroupBody = {
  name: "Linux servers",
  matchAll: true,
  rules: [{ field: "platform", op: "equals", value: "linux" }],
  excludeRules: [{ field: "hostname", op: "startsWith", value: "lab-" }],
  offlineAlertMinutes: null,
};

// @ts-expect-error create-group requires a name
export const unnamed: CreateGroupBody = { description: "no name" };

// A patch is any subset, with the same field types as the create body.
export const rename: PatchGroupBody = { name: dynamicGroup.name, rules: dynamicGroup.rules };

export async function example(server: string, token: string): Promise<string> {
  const answer = await createGroup(server, token, staticGroup);
  return answer.group.id;
}

// Vulnerability.riskAccepted is always present: an object or null.
export function acceptedBy(v: components["schemas"]["Vulnerability"]): string | null {
  return v.riskAccepted === null ? null : v.riskAccepted.acceptedBy;
}

// approvalMode is an enum.
export const onlyApproved: components["schemas"]["DeployUpdatesPayload"] = { mode: "all", approvalMode: "approved" };
// @ts-expect-error approvalMode is all or approved
export const unknownMode: components["schemas"]["DeployUpdatesPayload"] = { approvalMode: "sometimes" };
