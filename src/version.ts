/** modtrans's version (package.json's; test/version.test.ts keeps them equal), recorded in every manifest. */
export const MODTRANS_VERSION = '0.1.0';
