// The interpreter selected in the Python extension (ms-python.python), when ctx.server.usePythonExtension.
import * as vscode from "vscode";
import { log } from "./log";

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(env: { path: string } | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
  settings?: { getExecutionDetails(resource?: vscode.Uri): { execCommand?: string[] } };
}

export async function pythonInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (!ext) {
    log.warn("ctx.server.usePythonExtension is set, but the Python extension (ms-python.python) is not installed");
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (envs) {
      const active = envs.getActiveEnvironmentPath(resource);
      if (active) {
        const env = await envs.resolveEnvironment(active);
        const exe = env?.executable?.uri?.fsPath;
        if (exe) return exe;
      }
    }
    const exec = api?.settings?.getExecutionDetails(resource)?.execCommand;
    return exec && exec.length ? exec[0] : undefined;
  } catch (err) {
    log.warn(`could not ask the Python extension for its interpreter: ${String(err)}`);
    return undefined;
  }
}
