import { RoleboxError } from '../errors.js';

/**
 * Imports a module that needs an optional package, and says what to install when that package
 * is missing (a static import would fail with Node's bare ERR_MODULE_NOT_FOUND).
 * Throws: `missing_dependency` naming `packageName` and `install`; any other error as it is.
 */
export async function importOptional<T>(
  load: () => Promise<T>,
  packageName: string,
  install: string,
  feature: string,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    if (code !== 'ERR_MODULE_NOT_FOUND' || !message?.includes(`'${packageName}'`)) throw error;
    throw new RoleboxError(
      'missing_dependency',
      `${feature} needs the package ${packageName}, which is not installed: ${install}`,
      { package: packageName, install },
    );
  }
}
