/**
 * What a tenant may be called. Names are compared byte for byte, so anything that looks alike but is
 * not the same (`" acme"`, `"Acme"`, a look-alike letter, a control character) would be a second tenant
 * that an operator could not tell from the first: only lowercase ASCII letters, digits, `.`, `_` and
 * `-`, starting with a letter or digit, 1 to 64 characters.
 */
export const TENANT_NAME_RULE = '1-64 characters of a-z, 0-9, ".", "_" and "-", starting with a letter or digit';

const TENANT_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Why `name` is not a valid tenant name, or undefined when it is. */
export function tenantNameProblem(name: string): string | undefined {
  return TENANT_NAME.test(name) ? undefined : `tenant name ${JSON.stringify(name)} is not valid: expected ${TENANT_NAME_RULE}`;
}
