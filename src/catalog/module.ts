import { defineContext } from '../module.ts';
import { catalogRoutes } from './routes.ts';

/** The payment catalog (data files) and the discovery endpoints that read it. */
export const catalogContext = defineContext({ name: 'catalog', routes: catalogRoutes });
