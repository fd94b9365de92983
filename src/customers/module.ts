import { defineContext } from '../module.ts';
import { customersProjector } from '../../projections/customers.ts';
import { customerRoutes } from './routes.ts';

/** Customers (payers), their documents and operation levels. */
export const customersContext = defineContext({ name: 'customers', routes: customerRoutes, projectors: [customersProjector] });
