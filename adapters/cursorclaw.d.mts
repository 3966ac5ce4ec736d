export * from './cursorclaw.cjs'
